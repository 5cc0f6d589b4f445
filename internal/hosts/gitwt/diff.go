package gitwt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/host"
)

// DiffName is the invoke name of the diff viewer.
const DiffName = "host.diff.open"

// Diff is host.diff.open without an IDE: it renders `git diff <base> --
// <paths>` as text in the run's output and returns it. It captures no
// verdict (the operator's next intent is the decision).
type Diff struct{ cfg Config }

// NewDiff returns the handler.
func NewDiff(cfg Config) *Diff {
	cfg.defaults()
	return &Diff{cfg: cfg}
}

// Invoke renders the diff.
func (d *Diff) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	data := map[string]any{"ok": false, "verdict": "", "reviewed": false, "surface": "none", "diff": "", "truncated": false}
	res := func(err error) (*host.Result, error) {
		return &host.Result{Data: data, Err: fmt.Errorf("%s: %w", DiffName, err)}, nil
	}
	if err := checkKeys(DiffName, call.Args); err != nil {
		return res(err)
	}
	paths, err := d.paths(call.Args["paths"])
	if err != nil {
		return res(err)
	}
	base, err := str(call.Args, "base")
	if err != nil {
		return res(err)
	}
	if base == "" {
		base = "HEAD"
	}
	if err := noOption("base", base); err != nil {
		return res(err)
	}
	title, err := str(call.Args, "title")
	if err != nil {
		return res(err)
	}
	dir, err := repo(ctx, &d.cfg)
	if err != nil {
		return res(err)
	}
	args := append([]string{"diff", "--no-color", "--no-ext-diff", base, "--"}, paths...)
	var out capped
	out.max = maxOutput
	text, err := git(ctx, &d.cfg, dir, args...)
	if err != nil {
		return res(err)
	}
	out.Write([]byte(text))
	data["diff"], data["truncated"], data["ok"] = out.String(), len(text) >= maxOutput, true
	if d.cfg.Out != nil {
		d.print(title, base, out.String())
		data["surface"], data["reviewed"] = "text", true
	}
	return &host.Result{Data: data}, nil
}

// paths reads with.paths (a list, or one path as a string), each inside
// the workspace, as paths relative to the workspace directory.
func (d *Diff) paths(raw any) ([]string, error) {
	var in []string
	switch x := raw.(type) {
	case nil:
	case string:
		if x != "" {
			in = []string{x}
		}
	case []any:
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("with.paths[%d] must be a path, got %T", i, e)
			}
			in = append(in, s)
		}
	default:
		return nil, fmt.Errorf("with.paths must be a list of paths, got %T", raw)
	}
	ws := d.cfg.Workspace
	out := make([]string, 0, len(in))
	for i, p := range in {
		if ws.IsZero() {
			return nil, errors.New("no workspace is set for this run, so with.paths cannot be checked")
		}
		real, err := ws.Resolve(ws.Dir(), p)
		if err != nil {
			return nil, fmt.Errorf("with.paths[%d] %w", i, err)
		}
		rel, _ := filepath.Rel(ws.Dir(), real)
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// print writes the diff under a header line.
func (d *Diff) print(title, base, diff string) {
	head := "diff against " + base
	if title != "" {
		head = title + " (" + head + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "── %s ──\n", head)
	if diff == "" {
		b.WriteString("(no changes)\n")
	} else {
		b.WriteString(diff)
		if !strings.HasSuffix(diff, "\n") {
			b.WriteByte('\n')
		}
	}
	b.WriteString("── end of diff ──\n")
	_, _ = io.WriteString(d.cfg.Out, b.String())
}
