// Package transport is host.transport.post to the terminal: the message is
// printed on the run's output (kitsoki run's stdout, through the writer
// that masks the story's secrets). It is the only transport kitsoki has.
package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Name is the invoke name of the handler.
const Name = "host.transport.post"

// Terminal is the transport the handler serves; "tui" names it too, as in
// Kitsoki's stories.
const Terminal = "terminal"

// DefaultMarker is written before every message unless with.bot_marker
// says otherwise.
const DefaultMarker = "[kitsoki]"

// Post is host.transport.post for one run.
type Post struct {
	out io.Writer // nil: the run has no terminal; messages are dropped

	mu     sync.Mutex
	counts map[string]int    // messages posted per thread
	phases map[string]string // thread + phase_id -> the message id posted for it
}

// New returns the handler printing on out; nil prints nothing (flows).
func New(out io.Writer) *Post {
	return &Post{out: out, counts: map[string]int{}, phases: map[string]string{}}
}

// Register installs host.transport.post on h.
func Register(h *host.Host, out io.Writer) { h.Register(Name, New(out)) }

// Invoke prints the message.
func (p *Post) Invoke(_ context.Context, call *host.Call) (*host.Result, error) {
	res := func(err error) (*host.Result, error) {
		return &host.Result{Data: map[string]any{"ok": false, "message_id": ""}, Err: fmt.Errorf("%s: %w", Name, err)}, nil
	}
	spec, _ := catalog.Lookup(Name)
	for _, k := range slices.Sorted(maps.Keys(call.Args)) {
		if _, ok := spec.Field(k); !ok && k != "call" {
			return res(fmt.Errorf("with.%s is not a field of %s (fields: transport, thread, body, title, phase_id, bot_marker)", k, Name))
		}
	}
	get := func(k string) (string, error) {
		v, ok := call.Args[k]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("with.%s must be a string, got %T", k, v)
		}
		return s, nil
	}
	tr, err := get("transport")
	if err != nil {
		return res(err)
	}
	switch tr {
	case "", Terminal, "tui":
	default:
		return res(fmt.Errorf("with.transport %q is not available: kitsoki posts to the terminal only (transport: terminal or tui); serve other transports from a host plugin", tr))
	}
	body, err := text(call.Args["body"])
	if err != nil {
		return res(err)
	}
	vals := map[string]string{}
	for _, k := range []string{"thread", "title", "phase_id", "bot_marker"} {
		if vals[k], err = get(k); err != nil {
			return res(err)
		}
	}
	marker := DefaultMarker
	if _, set := call.Args["bot_marker"]; set {
		marker = vals["bot_marker"]
	}
	thread, phase := vals["thread"], vals["phase_id"]
	p.mu.Lock()
	if id, dup := p.phases[thread+"\x00"+phase]; dup && phase != "" {
		p.mu.Unlock() // this phase was posted on this thread already
		return &host.Result{Data: map[string]any{"ok": true, "message_id": id, "duplicate": true}}, nil
	}
	p.counts[thread]++
	id := thread
	if id == "" {
		id = Terminal
	}
	id = fmt.Sprintf("%s#%d", id, p.counts[thread])
	if phase != "" {
		p.phases[thread+"\x00"+phase] = id
	}
	p.mu.Unlock()
	if p.out != nil {
		var b strings.Builder
		var head []string
		for _, h := range []string{thread, vals["title"]} {
			if h != "" {
				head = append(head, h)
			}
		}
		line := strings.TrimSpace(marker + " " + strings.Join(head, " · "))
		if line != "" {
			b.WriteString(line)
			b.WriteByte('\n')
		}
		b.WriteString(body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteByte('\n')
		}
		if _, err := io.WriteString(p.out, b.String()); err != nil {
			return nil, fmt.Errorf("%s: write to the terminal: %w", Name, err)
		}
	}
	return &host.Result{Data: map[string]any{"ok": true, "message_id": id, "duplicate": false}}, nil
}

// text is with.body: a string as it is, maps and lists as indented JSON.
func text(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", fmt.Errorf("with.body is required: the message")
	case string:
		return x, nil
	case map[string]any, []any:
		b, err := json.MarshalIndent(x, "", "  ")
		if err != nil {
			return "", fmt.Errorf("with.body: %w", err)
		}
		return string(b), nil
	}
	return fmt.Sprint(v), nil
}
