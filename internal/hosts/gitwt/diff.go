package gitwt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
	"github.com/kitsoki/kitsoki/internal/hosts/ide"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// DiffName is the invoke name of the diff viewer.
const DiffName = "host.diff.open"

// Diff is host.diff.open without an IDE: it renders `git diff <base> --
// <paths>` as text in the run's output, returns it, and asks the run's
// operator (when there is one) to accept or reject it.
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
	if err := catalog.CheckArgs(DiffName, call.Args); err != nil {
		return res(err)
	}
	title, err := str(call.Args, "title")
	if err != nil {
		return res(err)
	}
	var text, against string
	if _, proposed := call.Args["new_text"]; proposed {
		text, against, err = d.proposed(ctx, call.Args)
	} else {
		text, against, err = d.onDisk(ctx, call.Args)
	}
	if err != nil {
		return res(err)
	}
	data["diff"], data["truncated"], data["ok"] = text, len(text) >= maxOutput, true
	if d.cfg.Out != nil {
		d.print(title, against, text)
		data["surface"], data["reviewed"] = "text", true
		// The person at the terminal decides: asked at the prompt when the
		// run has an operator; with none, no verdict is recorded.
		what := against
		if title != "" {
			what = title + " (" + against + ")"
		}
		accept, answered, err := ide.AskVerdict(ctx, call.Run.Live, what)
		if err != nil {
			return res(err)
		}
		if answered {
			data["verdict"] = map[bool]string{true: "accept", false: "reject"}[accept]
		}
	}
	return &host.Result{Data: data}, nil
}

// onDisk is the diff of with.paths (default the whole tree) in the working
// tree against with.base (default HEAD), and what it is against.
func (d *Diff) onDisk(ctx context.Context, args map[string]any) (string, string, error) {
	if _, ok := args["path"]; ok {
		return "", "", errors.New("with.path goes with with.new_text (proposed content); for changes on disk give with.paths")
	}
	paths, err := d.paths(args["paths"])
	if err != nil {
		return "", "", err
	}
	base, err := str(args, "base")
	if err != nil {
		return "", "", err
	}
	if base == "" {
		base = "HEAD"
	}
	if err := noOption("base", base); err != nil {
		return "", "", err
	}
	dir, err := repo(ctx, &d.cfg)
	if err != nil {
		return "", "", err
	}
	text, err := git(ctx, &d.cfg, dir, append([]string{"diff", "--no-color", "--no-ext-diff", base, "--"}, paths...)...)
	return text, "diff against " + base, err
}

// proposed is the diff from the file with.path (inside the workspace; a
// missing file is empty) to with.new_text, content not yet on disk. Both
// sides are copied to a temporary directory as a/<path> and b/<path> and
// compared there with git diff --no-index, so the diff names the file as
// a repository diff does; no repository is needed.
func (d *Diff) proposed(ctx context.Context, args map[string]any) (string, string, error) {
	for _, k := range []string{"paths", "base"} {
		if _, ok := args[k]; ok {
			return "", "", fmt.Errorf("with.%s is for changes on disk; with.new_text compares with.path's current content with it: give one or the other", k)
		}
	}
	name, err := str(args, "path")
	if err != nil {
		return "", "", err
	}
	if name == "" {
		return "", "", errors.New("with.path is required with with.new_text: the file the proposed content would replace")
	}
	newText, err := str(args, "new_text")
	if err != nil {
		return "", "", err
	}
	ws := d.cfg.Workspace
	if ws.IsZero() {
		return "", "", errors.New("no workspace is set for this run, so with.path cannot be checked")
	}
	real, err := ws.Resolve(ws.Dir(), name)
	if err != nil {
		return "", "", fmt.Errorf("with.path %w", err)
	}
	var old []byte
	if _, err := ws.Stat(real); err == nil {
		if old, err = ws.Read(real, name); err != nil {
			return "", "", fmt.Errorf("with.path: %w", err)
		}
	}
	rel, _ := filepath.Rel(ws.Dir(), real)
	// The two sides are written under the workspace's .kitsoki/tmp, so git
	// runs in a directory inside the workspace (its own, not the story's).
	fsys := hostfs.New(ws)
	tmp, err := fsys.MkdirTemp(filepath.Join(ws.Dir(), ".kitsoki", "tmp"), "diff-")
	if err != nil {
		return "", "", err
	}
	defer fsys.RemoveAll(tmp)
	for side, b := range map[string][]byte{"a": old, "b": []byte(newText)} {
		if err := fsys.WriteFile(filepath.Join(tmp, side, rel), b); err != nil {
			return "", "", err
		}
	}
	a, b := filepath.ToSlash(filepath.Join("a", rel)), filepath.ToSlash(filepath.Join("b", rel))
	text, err := git(ctx, &d.cfg, tmp, "diff", "--no-index", "--no-color", "--no-ext-diff", "--no-prefix", "--", a, b)
	if ge := (*gitError)(nil); errors.As(err, &ge) && ge.Code == 1 {
		err = nil // differences found
	}
	return text, "proposed " + filepath.ToSlash(rel), err
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
func (d *Diff) print(title, against, diff string) {
	head := against
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
