package host

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// renderPrompt builds the prompt text of an agent call. with.prompt is a
// file path relative to the story directory when such a file exists, else
// the prompt text itself; with.prompt_path is always a file. Prompt files
// are text templates that see only `args`: with.args when given, else the
// whole with-map. Inline text was already rendered as a value template when
// the with-map was rendered, so it is used as is.
func (h *Host) renderPrompt(with map[string]any) (string, error) {
	if pp, ok := with["prompt_path"].(string); ok && pp != "" {
		t, err := h.promptFile(pp, true)
		if err != nil {
			return "", err
		}
		return render(t, pp, with)
	}
	p, _ := with["prompt"].(string)
	args, ok := with["args"]
	if !ok {
		args = with
	}
	if p == "" {
		// Kitsoki's task form: context.prompt with context.args; and
		// converse's question, the turn's text.
		if c, ok := with["context"].(map[string]any); ok {
			if cp, _ := c["prompt"].(string); cp != "" {
				p, args = cp, c["args"]
				if args == nil {
					args = map[string]any{}
				}
			}
		}
		if q, _ := with["question"].(string); p == "" && q != "" {
			return q, nil
		}
	}
	if p == "" {
		return "", errors.New("with.prompt is required (a prompt file relative to the story directory, or the prompt text)")
	}
	t, err := h.promptFile(p, false)
	if err != nil {
		return "", err
	}
	if t == nil {
		return p, nil
	}
	return renderArgs(t, p, args)
}

func render(t *expr.Text, path string, with map[string]any) (string, error) {
	args, ok := with["args"]
	if !ok {
		args = with
	}
	return renderArgs(t, path, args)
}

// renderArgs renders a prompt template that sees args as args.
func renderArgs(t *expr.Text, path string, args any) (string, error) {
	out, err := t.Render(expr.Env{"args": args})
	if err != nil {
		return "", fmt.Errorf("prompt %s: %w", path, err)
	}
	return out, nil
}

// promptFile returns the compiled prompt file at path, or nil when path is
// not a file and must (must=false) be taken as inline text. Files compiled
// at load are used directly; others are read and compiled once.
func (h *Host) promptFile(path string, must bool) (*expr.Text, error) {
	if t, ok := h.story.Prompts[path]; ok {
		return t, nil
	}
	if v, ok := h.prompts.Load(path); ok {
		return v.(*expr.Text), nil
	}
	if !must && !looksLikePath(path) {
		return nil, nil
	}
	full := path
	if !filepath.IsAbs(full) {
		full = filepath.Join(h.story.Dir, filepath.FromSlash(path))
	}
	// A file outside the story's workspace is never read: with.prompt_path
	// naming one is an error, and so is with.prompt naming an existing one.
	ws := h.story.Workspace
	if ws.IsZero() {
		var err error
		if ws, err = workspace.New(h.story.Dir); err != nil {
			return nil, fmt.Errorf("prompt file %s: %w", path, err)
		}
	}
	// A bare path resolves in the prompt overlay first, as at load.
	if ov := h.story.PromptOverlay; ov != "" && !filepath.IsAbs(path) {
		if t, ok, err := h.overlayPrompt(ws, ov, path); ok || err != nil {
			return t, err
		}
	}
	real, err := ws.Resolve(h.story.Dir, path)
	if err != nil {
		var oe *workspace.OutsideError
		if !must && errors.As(err, &oe) {
			if fi, serr := ws.Stat(full); serr != nil || !fi.Mode().IsRegular() {
				return nil, nil
			}
		}
		return nil, fmt.Errorf("prompt file %s: %w", path, err)
	}
	b, err := ws.Read(real, path)
	if err != nil {
		if !must && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || errors.Is(err, workspace.ErrNotRegular)) {
			return nil, nil
		}
		return nil, fmt.Errorf("prompt file %s: %w", path, err)
	}
	return h.compilePrompt(real, path, b)
}

// overlayPrompt is the overlay's file of a prompt path, when it has one.
func (h *Host) overlayPrompt(ws workspace.Root, overlay, path string) (*expr.Text, bool, error) {
	real, err := ws.Resolve(overlay, path)
	if err != nil {
		return nil, false, nil
	}
	b, err := ws.Read(real, path)
	if err != nil {
		return nil, false, nil
	}
	t, err := h.compilePrompt(real, path, b)
	return t, true, err
}

// compilePrompt compiles a prompt file read at run time, its include,
// extends and import tags resolved first.
func (h *Host) compilePrompt(abs, path string, b []byte) (*expr.Text, error) {
	src, err := h.story.AssemblePrompt(abs, string(b))
	if err != nil {
		return nil, fmt.Errorf("prompt file %s: %w", path, err)
	}
	t, err := expr.CompileText(src)
	if err != nil {
		return nil, fmt.Errorf("prompt file %s: %w", path, err)
	}
	h.prompts.Store(path, t)
	return t, nil
}

// looksLikePath rules out text that cannot be a file name, so inline
// prompts cost no stat.
func looksLikePath(s string) bool {
	return len(s) < 512 && !strings.ContainsAny(s, "\n{}") && strings.TrimSpace(s) == s
}

// schema returns the compiled schema for a with.schema path: compiled at
// load for literal paths, else compiled now (once) inside the story tree.
func (h *Host) schema(path string) (*schema.Schema, error) {
	if s, ok := h.story.Schemas[path]; ok {
		return s, nil
	}
	if h.story.SchemaCompiler == nil {
		return nil, fmt.Errorf("schema %q: story has no schema compiler", path)
	}
	return h.story.SchemaCompiler.Compile(path)
}
