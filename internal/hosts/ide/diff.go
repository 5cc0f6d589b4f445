package ide

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
)

// Verdicts of open_diff.
const (
	Accepted = "accepted"
	Rejected = "rejected"
)

// openDiff shows with.path's content against the proposed content
// (with.new_text, or the file with.new_text_path) and asks the operator for
// a verdict; accepted writes the proposed content into with.path, as an
// editor's accept would.
func (hd *Handler) openDiff(ctx context.Context, call *host.Call) (map[string]any, error) {
	fsys := hostfs.New(hd.cfg.Workspace)
	real, rel, err := hd.file(call.Args, "path", true)
	if err != nil {
		return nil, err
	}
	proposed, newPath, err := hd.proposed(call.Args)
	if err != nil {
		return nil, err
	}
	old, err := fsys.ReadFile(real)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("with.path: %w", err)
	}
	tmp, err := fsys.MkdirTemp(filepath.Join(hd.cfg.Workspace.Dir(), ".kitsoki", "tmp"), "diff-")
	if err != nil {
		return nil, err
	}
	defer fsys.RemoveAll(tmp)
	text, err := hd.diffText(ctx, fsys, tmp, rel, old, proposed)
	if err != nil {
		return nil, err
	}
	title, _ := call.Args["title"].(string)
	e := hd.editor(ctx)
	data := map[string]any{"path": real, "diff": text, "verdict": "", "applied": false, "reviewed": false, "connected": e.kind == "vscode", "surface": "none"}
	switch {
	case e.kind == "vscode":
		right := newPath
		if right == "" {
			right = filepath.Join(tmp, "b", filepath.FromSlash(rel))
		}
		left := real
		if old == nil {
			left = filepath.Join(tmp, "a", filepath.FromSlash(rel))
		}
		if err := hd.run(ctx, e, "--wait", "--diff", left, right); err != nil {
			return data, fmt.Errorf("the editor (%s, from %s) did not show the diff: %w", e.argv[0], e.source, err)
		}
		data["surface"], data["reviewed"] = e.surface(), true
	case hd.cfg.Out != nil:
		hd.print(title, rel, text, e)
		data["surface"], data["reviewed"] = "text", true
	}
	hd.remember(map[string]any{"path": real, "line": int64(0), "diff": true})
	if data["reviewed"] != true {
		return data, nil // nothing was shown: there is nothing to decide on
	}
	verdict, err := hd.ask(ctx, call, rel, title)
	if err != nil {
		return data, err
	}
	data["verdict"] = verdict
	if verdict == Accepted {
		if err := fsys.WriteFile(real, proposed); err != nil {
			return data, fmt.Errorf("write the accepted change to %s: %w", rel, err)
		}
		data["applied"] = true
	}
	return data, nil
}

// proposed reads the proposed content: with.new_text, or the file
// with.new_text_path (inside the workspace).
func (hd *Handler) proposed(args map[string]any) ([]byte, string, error) {
	text, hasText := args["new_text"].(string)
	p, _ := args["new_text_path"].(string)
	switch {
	case hasText && strings.TrimSpace(p) != "":
		return nil, "", errBothTexts
	case hasText:
		return []byte(text), "", nil
	case strings.TrimSpace(p) == "":
		return nil, "", errors.New("with.new_text or with.new_text_path is required: the proposed content, or a file holding it")
	}
	real, rel, err := hd.file(args, "new_text_path", true)
	if err != nil {
		return nil, "", err
	}
	b, err := hostfs.New(hd.cfg.Workspace).ReadFile(real)
	if err != nil {
		return nil, "", fmt.Errorf("with.new_text_path %q: %w", rel, err)
	}
	return b, real, nil
}

// diffText is the unified diff of old against proposed, naming the file:
// both sides are written under dir as a/<rel> and b/<rel> and compared
// with git diff --no-index.
func (hd *Handler) diffText(ctx context.Context, fsys hostfs.FS, dir, rel string, old, proposed []byte) (string, error) {
	for side, b := range map[string][]byte{"a": old, "b": proposed} {
		if err := fsys.WriteFile(filepath.Join(dir, side, filepath.FromSlash(rel)), b); err != nil {
			return "", err
		}
	}
	out, err := gitrepo.Tool(hd.cfg.Workspace, hd.cfg.Logger).Run(ctx, dir, "diff", "--no-index", "--no-color", "--no-ext-diff", "--no-prefix", "--", "a/"+rel, "b/"+rel)
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) && ee.Code == 1 {
		return ee.Stdout, nil // differences found
	}
	return out.Stdout, err
}

// print writes the diff on the run's output under a header line.
func (hd *Handler) print(title, rel, text string, e editor) {
	head := "proposed " + rel
	if title != "" {
		head = title + " (" + head + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "── %s%s ──\n", head, hd.why(e))
	if text == "" {
		b.WriteString("(no changes)\n")
	} else {
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	b.WriteString("── end of diff ──\n")
	fmt.Fprint(hd.cfg.Out, b.String())
}

// ask asks the run's operator whether to accept the change: accepted,
// rejected, or "" when the run has no operator (a text view captures no
// decision then, and none is recorded).
func (hd *Handler) ask(ctx context.Context, call *host.Call, rel, title string) (string, error) {
	what := rel
	if title != "" {
		what = title + " (" + rel + ")"
	}
	accept, answered, err := AskVerdict(ctx, call.Run.Live, what)
	switch {
	case err != nil || !answered:
		return "", err
	case accept:
		return Accepted, nil
	}
	return Rejected, nil
}

// AskVerdict asks the operator of live (the call's run) whether to accept
// the change to what, up to twice when the answer is neither. answered is
// false when the run has no operator or none answered; err is set only
// when the call's context ended.
func AskVerdict(ctx context.Context, live host.LiveActions, what string) (accept, answered bool, err error) {
	if live == nil {
		return false, false, nil
	}
	q := fmt.Sprintf("Accept the change to %s? Answer accept or reject.", what)
	for range 2 {
		a, err := live.AskOperator(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return false, false, err
			}
			return false, false, nil // no operator can answer: no verdict
		}
		switch strings.ToLower(strings.TrimSpace(a)) {
		case "accept", "accepted", "a", "yes", "y":
			return true, true, nil
		case "reject", "rejected", "r", "no", "n":
			return false, true, nil
		}
		q = fmt.Sprintf("%q is neither accept nor reject. Accept the change to %s?", a, what)
	}
	return false, false, nil
}
