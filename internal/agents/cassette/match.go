package cassette

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// Key is what an episode is matched against: the handler name (the
// registered handler, or the agent alias), the phase of the state path, and
// the call's arguments.
type Key struct {
	handler string
	phase   string
	args    map[string]any
	enc     map[string]string // JSON encodings of looked-up values, cached
	// hashOf computes the request's hash the first time an episode with a
	// request_hash is checked (nil skips the check): hashing encodes the
	// prompt, schema and with:, which most replays never need.
	hashOf func() string
	hash   string
	hashed bool
	// refused is set by pick under WithStrictRequests: the first episode
	// that matched but was recorded for another request.
	refused string
}

// NewKey builds the match key of a call: the handler name (a registered
// handler, or an agent alias), the phase of its state path, its arguments
// and how to compute its request hash (nil skips the request_hash check;
// it is called at most once, and only when an episode has a request_hash).
func NewKey(handler, phase string, args map[string]any, hash func() string) *Key {
	return &Key{handler: handler, phase: phase, args: args, enc: map[string]string{}, hashOf: hash}
}

// requestHash is the call's request hash, computed once; "" without one.
func (k *Key) requestHash() string {
	if !k.hashed {
		k.hashed = true
		if k.hashOf != nil {
			k.hash = k.hashOf()
		}
	}
	return k.hash
}

// lookup returns the call's value for a match key and whether it exists.
func (k *Key) lookup(name string) (any, bool) {
	switch name {
	case "handler":
		return k.handler, true
	case "phase":
		return k.phase, true
	case "schema_name":
		s, ok := k.args["schema"].(string)
		if !ok || s == "" {
			return nil, false
		}
		return path.Base(strings.ReplaceAll(s, "\\", "/")), true
	default: // "call" is args.call like any other key
		v, ok := k.args[name]
		return v, ok
	}
}

// encoded returns the JSON encoding of the call's value for a key.
func (k *Key) encoded(name string, v any) string {
	if e, ok := k.enc[name]; ok {
		return e
	}
	j, err := json.Marshal(v)
	e := string(j)
	if err != nil {
		e = "\x00unencodable"
	}
	k.enc[name] = e
	return e
}

// holds reports whether one match entry holds for the call. An absent
// argument matches only null. Values are equal when == holds or their JSON
// encodings are identical (1 equals 1.0; 1 does not equal "1").
func (k *Key) holds(ep *Episode, name string) bool {
	want := ep.Match[name]
	got, ok := k.lookup(name)
	if !ok || got == nil {
		return want == nil
	}
	if want == nil {
		return false
	}
	if scalarEqual(want, got) {
		return true
	}
	return ep.matchEnc[name] == k.encoded(name, got)
}

// scalarEqual is == for the comparable scalar types YAML and JSON produce.
func scalarEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int:
		y, ok := b.(int)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return false
}

// matches reports whether every match entry of ep holds.
func (k *Key) matches(ep *Episode) bool {
	for name := range ep.Match {
		if !k.holds(ep, name) {
			return false
		}
	}
	return true
}

// Picked is an episode chosen for a call, with its match_idx.
type Picked struct {
	Episode *Episode
	Index   int // match_idx: how often the episode played before
}

// Pick walks the episodes top-down, skipping played ones unless reusable,
// and takes the first whose every match entry holds: it is marked played
// and gets match_idx = its play count so far. An episode recorded for
// another request (its request_hash differs from the call's) still answers,
// with a warning; under WithStrictRequests it does not match, and the
// first such episode is named in k.refused.
func (c *Cassette) Pick(k *Key) (Picked, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ep := range c.Episodes {
		if c.plays[i] > 0 && !ep.Reusable {
			continue
		}
		if !k.matches(ep) {
			continue
		}
		if ep.RequestHash != "" {
			if h := k.requestHash(); h != "" && h != ep.RequestHash {
				text := fmt.Sprintf("cassette episode %d %q (%s): recorded for a different request (hash %s ≠ %s)",
					i+1, ep.ID, k.handler, ep.RequestHash, h)
				if c.strict {
					if k.refused == "" {
						k.refused = text + "; refused under --cassette-strict"
					}
					continue
				}
				c.warnings = append(c.warnings, text)
			}
		}
		p := Picked{Episode: ep, Index: c.plays[i]}
		c.plays[i]++
		return p, true
	}
	return Picked{}, false
}

// Miss records the miss of a call that Pick found nothing for (TakeMisses
// returns it) and returns its message.
func (c *Cassette) Miss(k *Key) string {
	msg := c.missMessage(k)
	c.addMiss(msg)
	return msg
}

// missMessage is what a call that pick found nothing for fails with: the
// strict refusal when an episode was refused for its request hash, else
// the miss text.
func (c *Cassette) missMessage(k *Key) string {
	if k.refused != "" {
		return k.refused
	}
	return c.missText(k)
}

// maxNearest is how many near-miss episodes a miss message explains.
const maxNearest = 3

// missText is the miss message: the spec's sentence, then the nearest
// episodes and the match keys that differed, so an author sees at once why
// nothing matched.
func (c *Cassette) missText(k *Key) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	args, err := json.Marshal(k.args)
	if err != nil {
		args = []byte(fmt.Sprint(k.args))
	}
	avail := []string{}
	type near struct {
		ep     *Episode
		order  int
		diffs  []string
		played bool
	}
	var nears []near
	for i, ep := range c.Episodes {
		played := c.plays[i] > 0 && !ep.Reusable
		if !played {
			avail = append(avail, ep.ID)
		}
		var diffs []string
		for _, name := range yamlnode.SortedKeys(ep.Match) {
			if !k.holds(ep, name) {
				diffs = append(diffs, k.describeDiff(ep, name))
			}
		}
		nears = append(nears, near{ep: ep, order: i, diffs: diffs, played: played})
	}
	sort.SliceStable(nears, func(a, b int) bool {
		na, nb := nears[a], nears[b]
		if len(na.diffs) != len(nb.diffs) {
			return len(na.diffs) < len(nb.diffs)
		}
		if na.played != nb.played {
			return !na.played
		}
		return na.order < nb.order
	})
	var b strings.Builder
	fmt.Fprintf(&b, "cassette miss: no episode matched handler=%q args=%s; available episodes: [%s]",
		k.handler, args, strings.Join(avail, " "))
	if len(nears) > maxNearest {
		nears = nears[:maxNearest]
	}
	for i, n := range nears {
		if i == 0 {
			b.WriteString("; nearest: ")
		} else {
			b.WriteString("; ")
		}
		switch {
		case len(n.diffs) == 0 && n.played:
			fmt.Fprintf(&b, "%q matches but already played (write replay: any to reuse it)", n.ep.ID)
		case n.played:
			fmt.Fprintf(&b, "%q (already played) differs on %s", n.ep.ID, strings.Join(n.diffs, ", "))
		default:
			fmt.Fprintf(&b, "%q differs on %s", n.ep.ID, strings.Join(n.diffs, ", "))
		}
	}
	return b.String()
}

// describeDiff says how one match key differs: what the episode wants and
// what the call has.
func (k *Key) describeDiff(ep *Episode, name string) string {
	got, ok := k.lookup(name)
	gotText := "nothing"
	if ok && got != nil {
		gotText = clipValue(k.encoded(name, got))
	}
	return fmt.Sprintf("%s (episode wants %s, call has %s)", name, clipValue(ep.matchEnc[name]), gotText)
}

// clipValue shortens a JSON value quoted in a message.
func clipValue(s string) string { return ClipTo(s, ValueClip) }

// ValueClip is how many bytes of a value a miss or assertion message
// quotes.
const ValueClip = 80

// ClipTo shortens s to max bytes (not splitting a UTF-8 sequence), marking
// the cut with "...": how a cassette miss and a flow assertion quote
// values in their messages.
func ClipTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "..."
}
