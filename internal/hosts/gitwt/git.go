// Package gitwt is the git-backed handlers: host.git_worktree (the
// workspace interface provider: list, get, create, sync, cleanup_scan,
// cleanup_apply over linked worktrees under
// <workspace>/.kitsoki/worktrees/<session>/<id>) and host.diff.open (the
// view-only fallback: a diff rendered as text in the run's output). Every
// git command runs through the process supervisor, argv only, no shell.
package gitwt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/supervise"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/artifacts"
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
type gitError struct {
	args []string
	code int
	out  string
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.out)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.code)
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

// errNoGit is git missing from PATH.
var errNoGit = errors.New("git is not installed (not found in $PATH): install git, or remove the call")

// git runs git with args in dir and returns its stdout; a non-zero exit is
// a *gitError carrying stderr.
func git(ctx context.Context, cfg *Config, dir string, args ...string) (string, error) {
	var out, errb capped
	out.max, errb.max = maxOutput, 64<<10
	p, err := supervise.Start(supervise.Config{
		Name: "git", Path: Git, Args: args, Dir: dir, Env: environ(),
		Stdout: &out, Stderr: &errb, Logger: cfg.Logger,
	})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", errNoGit
		}
		return "", fmt.Errorf("start git: %w", err)
	}
	exit, err := p.Wait(ctx)
	if err != nil {
		return out.String(), fmt.Errorf("git %s stopped: %w", strings.Join(args, " "), err)
	}
	if code := exit.Code(); code != 0 {
		return out.String(), &gitError{args: args, code: code, out: errb.String() + out.String()}
	}
	return out.String(), nil
}

// environ is kitsoki's environment with git's credential prompts off: a
// git command waiting on a terminal prompt would stall the run.
func environ() []string {
	return append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
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
			return "", fmt.Errorf("the workspace %s is not inside a git work tree (%s): run kitsoki on a story in a git repository, or pass --workspace with a directory inside one", ws.Dir(), strings.TrimSpace(ge.out))
		}
		return "", err
	}
	return ws.Dir(), nil
}

// capped keeps the first max bytes written and drops the rest.
type capped struct {
	max int
	buf bytes.Buffer
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	switch {
	case room >= len(p):
		c.buf.Write(p)
	case room > 0:
		c.buf.Write(p[:room])
		c.cut = true
	default:
		c.cut = true
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

// sanitize makes a worktree id or a session id a safe directory name, as
// artifact names are made.
func sanitize(s string) string { return artifacts.Sanitize(s) }

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
func noOption(key, v string) error {
	if strings.HasPrefix(v, "-") {
		return fmt.Errorf("with.%s %q starts with '-': git would read it as an option; name a branch, commit or path", key, v)
	}
	return nil
}
