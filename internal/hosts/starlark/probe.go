package starlark

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/supervise"
	"go.starlark.net/starlark"
)

// probe is one allow-listed read-only command: a fixed argv with "{}"
// where the script's arguments go (each one argv element, never a shell
// word), and how many arguments it takes.
type probe struct {
	argv          []string
	minArgs, maxA int // maxA < 0: any number
}

// probes is the allow-list of ctx.probe, by name.
var probes = map[string]probe{
	"git.status":    {argv: []string{"git", "status", "--porcelain=v1"}},
	"git.ls_files":  {argv: []string{"git", "ls-files", "--", "{}"}, maxA: -1},
	"gh.issue.list": {argv: []string{"gh", "issue", "list", "--repo", "{}", "--state", "all", "--limit", "1000", "--json", "number,title,state"}, minArgs: 1, maxA: 1},
}

// ProbeNames lists the allow-list, sorted.
func ProbeNames() []string {
	out := make([]string, 0, len(probes))
	for n := range probes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// probeGrace is how long a cancelled probe gets between SIGTERM and SIGKILL.
const probeGrace = 500 * time.Millisecond

func (r *run) probe(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	var list *starlark.List
	if err := starlark.UnpackArgs("ctx.probe", args, kwargs, "name", &name, "args?", &list); err != nil {
		return nil, err
	}
	p, ok := probes[name]
	if !ok {
		return nil, fmt.Errorf("ctx.probe: %q is not an allow-listed probe (known: %s)", name, strings.Join(ProbeNames(), ", "))
	}
	var pargs []string
	if list != nil {
		for i := range list.Len() {
			s, ok := list.Index(i).(starlark.String)
			if !ok {
				return nil, fmt.Errorf("ctx.probe(%q): args[%d] is a %s; probe arguments are strings", name, i, list.Index(i).Type())
			}
			if strings.HasPrefix(string(s), "-") {
				return nil, fmt.Errorf("ctx.probe(%q): args[%d] %q starts with '-'; probe arguments are values, never options", name, i, string(s))
			}
			pargs = append(pargs, string(s))
		}
	}
	if len(pargs) < p.minArgs || (p.maxA >= 0 && len(pargs) > p.maxA) {
		return nil, fmt.Errorf("ctx.probe(%q): takes %s, got %d", name, argCount(p), len(pargs))
	}
	var argv []string
	for _, a := range p.argv {
		if a == "{}" {
			argv = append(argv, pargs...)
			continue
		}
		argv = append(argv, a)
	}
	if pr := r.h.opts.Probe; pr != nil {
		code, text, err := pr.Probe(r.ctx, name, pargs)
		if err != nil {
			return nil, fmt.Errorf("ctx.probe(%q): %w", name, err)
		}
		if err := r.charge(int64(len(text)), func() string { return fmt.Sprintf("ctx.probe(%q)'s output", name) }); err != nil {
			return nil, err
		}
		d := starlark.NewDict(2)
		_ = d.SetKey(starlark.String("exit"), starlark.MakeInt(code))
		_ = d.SetKey(starlark.String("out"), starlark.String(text))
		return d, nil
	}
	ws := r.h.st.Workspace
	if ws.IsZero() {
		return nil, fmt.Errorf("ctx.probe(%q): the story has no workspace", name)
	}
	out := &capped{max: MaxProbeOutput}
	proc, err := supervise.Start(supervise.Config{Name: "probe " + name, Path: argv[0], Args: argv[1:], Dir: ws.Dir(),
		Stdout: out, Grace: probeGrace, Logger: r.h.opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("ctx.probe(%q): %w", name, err)
	}
	exit, err := proc.Wait(r.ctx)
	if err != nil {
		return nil, fmt.Errorf("ctx.probe(%q): %w", name, err)
	}
	d := starlark.NewDict(3)
	_ = d.SetKey(starlark.String("exit"), starlark.MakeInt(exit.Code()))
	out.mu.Lock()
	_ = d.SetKey(starlark.String("out"), starlark.String(out.buf))
	if out.truncated {
		_ = d.SetKey(starlark.String("truncated"), starlark.True)
	}
	out.mu.Unlock()
	return d, nil
}

func argCount(p probe) string {
	switch {
	case p.maxA < 0:
		return fmt.Sprintf("at least %d arguments", p.minArgs)
	case p.minArgs == p.maxA:
		return fmt.Sprintf("exactly %d arguments", p.minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", p.minArgs, p.maxA)
}

// capped keeps the first max bytes written to it.
type capped struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - len(c.buf)
	if room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf = append(c.buf, p[:room]...)
		}
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}
