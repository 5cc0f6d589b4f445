// Package gitwt is the git-backed handlers: host.git_worktree (the
// workspace interface provider: list, get, create, sync, cleanup_scan,
// cleanup_apply over linked worktrees at <workspace>/.worktrees/<id>, the
// session that made each one recorded under .kitsoki/worktrees) and host.diff.open (the
// view-only fallback: a diff rendered as text in the run's output). Every
// git command runs through the process supervisor, argv only, no shell.
package gitwt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/artifacts"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
)

// Git is the program every handler runs (looked up in PATH).
const Git = "git"

// maxOutput caps what one git command's output keeps: 1 MiB.
const maxOutput = 1 << 20

// Config is what the handlers need of the run.
type Config struct {
	// Workspace is the directory whose git repository the handlers act
	// on; every path they touch stays inside it.
	Workspace workspace.Root
	// Out is where host.diff.open prints a diff (kitsoki run's masked
	// stdout); nil prints nothing (flows), and the call says reviewed:
	// false.
	Out io.Writer
	// Logger receives the supervisor's warnings; nil discards them.
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// gitError is a git command that ran and failed.
type gitError = cmdrun.ExitError

// git runs git with args in dir and returns its stdout; a non-zero exit is
// a *gitError carrying stderr.
func git(ctx context.Context, cfg *Config, dir string, args ...string) (string, error) {
	out, err := Tool(cfg.Workspace, cfg.Logger).Run(ctx, dir, args...)
	return out.Stdout, err
}

// Tool is git as every git-backed handler runs it (gitrepo.Tool).
func Tool(ws workspace.Root, logger *slog.Logger) cmdrun.Tool {
	t := gitrepo.Tool(ws, logger)
	t.MaxOutput = maxOutput
	return t
}

// repo checks that git is installed and that the workspace lies in a git
// work tree, and returns the workspace directory.
func repo(ctx context.Context, cfg *Config) (string, error) {
	ws := cfg.Workspace
	if ws.IsZero() {
		return "", errors.New("no workspace is set for this run, so there is no git repository to work in")
	}
	if fsys, _ := ws.FS(); fsys != nil {
		return "", fmt.Errorf("the workspace %s is read from memory (an fs.FS), so git cannot work in it", ws.Dir())
	}
	if _, err := git(ctx, cfg, ws.Dir(), "rev-parse", "--show-toplevel"); err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			return "", fmt.Errorf("the workspace %s is not inside a git work tree (%s): run kitsoki on a story in a git repository, or pass --workspace with a directory inside one", ws.Dir(), ge.Message())
		}
		return "", err
	}
	return ws.Dir(), nil
}

// safeName is a name kept as it is for a directory: what a story passes as
// a worktree id (Kitsoki's stories name their work directories by it).
var safeName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$`)

// sanitize makes a worktree id or a session id a safe directory name: one
// that already is one is kept verbatim, any other is made one as artifact
// names are.
func sanitize(s string) string {
	if safeName.MatchString(s) && !strings.Contains(s, "..") {
		return s
	}
	return artifacts.Sanitize(s)
}

// str reads with.<key> as a string; absent or null is "".
func str(args map[string]any, key string) (string, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("with.%s must be a string, got %T", key, v)
	}
	return s, nil
}

// noOption refuses a value git would read as an option.
func noOption(key, v string) error { return cmdrun.NoOption(Git, key, v) }
