// Package ide is host.ide.*: a story's editor awareness without Kitsoki's
// IDE link. open_file and open_diff go to the editor the run is set to use
// (KITSOKI_EDITOR, the repository's git config kitsoki.editor, $VISUAL,
// $EDITOR): VS Code's code CLI (and its kin: codium, cursor, …) opens files
// at a line and shows diffs, any other command is handed the file. With no
// editor, or a terminal editor the run's terminal cannot be lent to, the
// terminal is the surface: the path or the diff is printed on the run's
// output and the operator is asked for the diff's verdict at the prompt.
// get_open_editors lists what the run opened; get_selection and
// get_diagnostics need a live link to the editor, which kitsoki does not
// hold, so they answer connected: false (the value Kitsoki's stories branch
// on when no IDE is connected).
package ide

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Namespace is the handlers' prefix.
const Namespace = "host.ide."

// EnvEditor names the environment variable that picks the editor first.
const EnvEditor = "KITSOKI_EDITOR"

// Setting is the git config key that picks a repository's editor.
const Setting = "kitsoki.editor"

// notConnected is why the read verbs have nothing to read.
const notConnected = "kitsoki holds no live link to an editor (the IDE link), so it cannot read the editor's selection or diagnostics"

var ops = []string{"open_file", "open_diff", "get_selection", "get_open_editors", "get_diagnostics"}

// Config is what the handlers need of the run.
type Config struct {
	Workspace workspace.Root
	// Out is the run's terminal (kitsoki run's masked stdout); nil is none
	// (flows, MCP-started runs).
	Out    io.Writer
	Logger *slog.Logger
	// Getenv reads the environment (KITSOKI_EDITOR, VISUAL, EDITOR); nil
	// is os.Getenv.
	Getenv func(string) string
}

// Handler is host.ide.* for one run.
type Handler struct {
	cfg    Config
	mu     sync.Mutex
	opened []map[string]any // what open_file and open_diff opened, in order
}

// Register installs host.ide.<op> for every op.
func Register(h *host.Host, cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	hd := &Handler{cfg: cfg}
	for _, op := range ops {
		h.Register(Namespace+op, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
			return hd.Invoke(ctx, call, op), nil
		}))
	}
	return hd
}

func fail(name string, err error, data map[string]any) *host.Result {
	d := map[string]any{}
	maps.Copy(d, data)
	d["ok"] = false
	return &host.Result{Data: d, Err: fmt.Errorf("%s: %w", name, err)}
}

// Invoke runs op.
func (hd *Handler) Invoke(ctx context.Context, call *host.Call, op string) *host.Result {
	name := Namespace + op
	if err := catalog.CheckArgs(name, call.Args); err != nil {
		return fail(name, err, nil)
	}
	var data map[string]any
	var err error
	switch op {
	case "open_file":
		data, err = hd.openFile(ctx, call)
	case "open_diff":
		data, err = hd.openDiff(ctx, call)
	case "get_open_editors":
		hd.mu.Lock()
		list := []any{}
		for _, e := range hd.opened {
			list = append(list, maps.Clone(e))
		}
		hd.mu.Unlock()
		ed := hd.editor(ctx)
		data = map[string]any{"editors": list, "count": int64(len(list)), "connected": ed.usable(), "surface": ed.surface()}
	case "get_selection":
		data = map[string]any{"connected": false, "file": "", "text": "", "range": nil, "reason": notConnected}
	case "get_diagnostics":
		data = map[string]any{"connected": false, "diagnostics": []any{}, "count": int64(0), "reason": notConnected}
	}
	if err != nil {
		return fail(name, err, data)
	}
	data["ok"] = true
	return &host.Result{Data: data}
}

// Connected reports whether the run's editor can show a native diff and
// gate it (a VS Code family editor): what a story's world.ide.connected
// says and host.ide.open_diff answers as connected. A terminal editor or
// none is not connected: the terminal is the surface then.
func (hd *Handler) Connected(ctx context.Context) bool { return hd.editor(ctx).kind == "vscode" }

// editor is the command files are opened with.
type editor struct {
	argv   []string
	source string // where it was set: KITSOKI_EDITOR, git config kitsoki.editor, VISUAL, EDITOR
	kind   string // vscode, terminal (cannot be used), other, or "" (none)
}

// vscode are the editors of VS Code's CLI family (--goto, --diff, --wait).
var vscode = []string{"code", "code-insiders", "codium", "vscodium", "cursor", "windsurf"}

// terminal are editors that need the terminal the run holds.
var terminal = []string{"vi", "vim", "nvim", "nano", "pico", "emacs", "micro", "hx", "helix", "ed", "kak", "joe", "mg"}

func (e editor) usable() bool { return e.kind == "vscode" || e.kind == "other" }

func (e editor) surface() string {
	if e.usable() {
		return "editor:" + filepath.Base(e.argv[0])
	}
	return "text"
}

// editor picks the run's editor: KITSOKI_EDITOR, else the workspace
// repository's git config kitsoki.editor, else $VISUAL, else $EDITOR. A
// value is split into words at spaces.
func (hd *Handler) editor(ctx context.Context) editor {
	pick := func(v, source string) editor {
		argv := strings.Fields(v)
		e := editor{argv: argv, source: source, kind: "other"}
		base := strings.TrimSuffix(filepath.Base(argv[0]), ".exe")
		switch {
		case slices.Contains(vscode, base):
			e.kind = "vscode"
		case slices.Contains(terminal, base) && !(base == "emacs" && slices.Contains(argv, "--no-wait")):
			e.kind = "terminal"
		}
		return e
	}
	if v := strings.TrimSpace(hd.cfg.Getenv(EnvEditor)); v != "" {
		return pick(v, EnvEditor)
	}
	if ws := hd.cfg.Workspace; !ws.IsZero() {
		if r, err := gitrepo.Open(ctx, gitrepo.Tool(hd.cfg.Workspace, hd.cfg.Logger), ws.Dir(), ws.Dir()); err == nil {
			if v, ok, _ := r.Config(ctx, Setting); ok && strings.TrimSpace(v) != "" {
				return pick(v, "git config "+Setting)
			}
		}
	}
	for _, k := range []string{"VISUAL", "EDITOR"} {
		if v := strings.TrimSpace(hd.cfg.Getenv(k)); v != "" {
			return pick(v, "$"+k)
		}
	}
	return editor{}
}

// run starts the editor with args and waits for it.
func (hd *Handler) run(ctx context.Context, e editor, args ...string) error {
	t := cmdrun.Tool{Program: e.argv[0], Logger: hd.cfg.Logger, Root: hd.cfg.Workspace,
		Missing: fmt.Sprintf("install it, or name another editor (%s, git config %s, $VISUAL or $EDITOR; set by %s)", EnvEditor, Setting, e.source)}
	_, err := t.Run(ctx, hd.cfg.Workspace.Dir(), append(slices.Clone(e.argv[1:]), args...)...)
	return err
}

// file resolves with.<key>, a path inside the workspace, relative to the
// workspace directory unless absolute.
func (hd *Handler) file(args map[string]any, key string, required bool) (string, string, error) {
	v, _ := args[key].(string)
	v = strings.TrimSpace(v)
	if v == "" {
		if required {
			return "", "", fmt.Errorf("with.%s is required: a file inside the workspace", key)
		}
		return "", "", nil
	}
	real, err := hostfs.New(hd.cfg.Workspace).Resolve(v)
	if err != nil {
		return "", "", fmt.Errorf("with.%s %w", key, err)
	}
	rel, err := filepath.Rel(hd.cfg.Workspace.Dir(), real)
	if err != nil {
		rel = real
	}
	return real, filepath.ToSlash(rel), nil
}

func (hd *Handler) remember(e map[string]any) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	hd.opened = slices.DeleteFunc(hd.opened, func(o map[string]any) bool { return o["path"] == e["path"] })
	hd.opened = append(hd.opened, e)
}

// openFile opens with.path (at with.line, with.column) in the editor, or
// names it on the run's output.
func (hd *Handler) openFile(ctx context.Context, call *host.Call) (map[string]any, error) {
	real, rel, err := hd.file(call.Args, "path", true)
	if err != nil {
		return nil, err
	}
	if fi, err := hostfs.New(hd.cfg.Workspace).Stat(real); err != nil {
		return nil, fmt.Errorf("with.path %q: no such file: write it first, or open an existing one", rel)
	} else if fi.IsDir() {
		return nil, fmt.Errorf("with.path %q is a directory: name a file", rel)
	}
	line, col := intArg(call.Args["line"]), intArg(call.Args["column"])
	e := hd.editor(ctx)
	data := map[string]any{"path": real, "opened": false, "connected": e.usable(), "surface": e.surface()}
	at := map[string]any{"path": real, "line": int64(line)}
	if e.usable() {
		target := []string{real}
		if e.kind == "vscode" {
			goTo := real
			if line > 0 {
				goTo = fmt.Sprintf("%s:%d", real, line)
				if col > 0 {
					goTo += fmt.Sprintf(":%d", col)
				}
			}
			target = []string{"--reuse-window", "--goto", goTo}
		}
		if err := hd.run(ctx, e, target...); err != nil {
			return data, fmt.Errorf("the editor (%s, from %s) did not open %s: %w", e.argv[0], e.source, rel, err)
		}
		data["opened"] = true
		hd.remember(at)
		return data, nil
	}
	if hd.cfg.Out != nil {
		where := rel
		if line > 0 {
			where = fmt.Sprintf("%s:%d", rel, line)
		}
		fmt.Fprintf(hd.cfg.Out, "── open %s in your editor%s ──\n", where, hd.why(e))
		data["surface"] = "text"
	} else {
		data["surface"] = "none"
	}
	hd.remember(at)
	return data, nil
}

// why says, on the terminal surface, why no editor was used.
func (hd *Handler) why(e editor) string {
	if e.kind == "terminal" {
		return fmt.Sprintf(" (%s needs the terminal this run is using)", filepath.Base(e.argv[0]))
	}
	return ""
}

func intArg(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	case string:
		var i int
		fmt.Sscanf(strings.TrimSpace(n), "%d", &i)
		return i
	}
	return 0
}

var errBothTexts = errors.New("with.new_text and with.new_text_path both give the proposed content: give one of them")
