// Package ci is the ci interface's provider host.local: run_tests and
// build run the given, configured or detected command in a work tree
// through host.run's process supervisor (timeout, output cap), count the
// tests when the output has a known shape, and record the run as a check of
// the commit on the local forge; remote_status reads a pull request's
// checks from the forge.
package ci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/forge"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
	hostrun "github.com/kitsoki/kitsoki/internal/hosts/run"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Name is the handler.
const Name = "host.local"

// Settings: the git config keys that give a repository's commands.
const (
	TestSetting  = "kitsoki.ci.test"
	BuildSetting = "kitsoki.ci.build"
)

// logTail is how much of a run's log a recorded check keeps.
const logTail = 4 << 10

// Config is what the handler needs of the run.
type Config struct {
	Workspace workspace.Root
	Clock     clock.Clock
	Logger    *slog.Logger
	// Lock is the local forge's lock, shared with the vcs handlers.
	Lock *sync.Mutex
	// GH is the GitHub CLI program for remote_status on GitHub.
	GH string
	// Environ is the environment commands inherit; nil is os.Environ.
	Environ func() []string
}

// Handler is host.local for one run.
type Handler struct {
	cfg Config
	run *hostrun.Handler
}

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Lock == nil {
		cfg.Lock = &sync.Mutex{}
	}
	return &Handler{cfg: cfg, run: hostrun.New(hostrun.Config{Workspace: cfg.Workspace, Clock: cfg.Clock, Logger: cfg.Logger, Environ: cfg.Environ})}
}

// Register installs host.local (with.op) and host.local.<op>.
func Register(h *host.Host, cfg Config) {
	hd := New(cfg)
	h.Register(Name, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
		op, _ := call.Args["op"].(string)
		if op == "" {
			return fail(Name, fmt.Errorf("with.op is required: one of %s (or invoke %s.<op>)", strings.Join(catalog.CIOps(), ", "), Name), nil), nil
		}
		return hd.Invoke(ctx, call, op), nil
	}))
	for _, op := range catalog.CIOps() {
		h.Register(Name+"."+op, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
			return hd.Invoke(ctx, call, op), nil
		}))
	}
}

func fail(name string, err error, data map[string]any) *host.Result {
	d := map[string]any{}
	maps.Copy(d, data)
	d["ok"] = false
	return &host.Result{Data: d, Err: fmt.Errorf("%s: %w", name, err)}
}

// Invoke runs op. A command that ran is not an error whatever its exit
// (ok and state say how it went); bad input, a command that cannot start
// or outlives its timeout are.
func (hd *Handler) Invoke(ctx context.Context, call *host.Call, op string) *host.Result {
	name := Name + "." + op
	if !slices.Contains(catalog.CIOps(), op) {
		return fail(Name, fmt.Errorf("with.op %q is not an operation (operations: %s)", op, strings.Join(catalog.CIOps(), ", ")), nil)
	}
	if err := catalog.CheckArgs(name, call.Args); err != nil {
		return fail(name, err, nil)
	}
	var data map[string]any
	var err error
	switch op {
	case "run_tests":
		data, err = hd.execute(ctx, call.Args, true)
	case "build":
		data, err = hd.execute(ctx, call.Args, false)
	case "remote_status":
		data, err = hd.remoteStatus(ctx, call.Args)
	}
	if err != nil {
		return fail(name, err, data)
	}
	return &host.Result{Data: data}
}

// job is one run_tests or build call.
type job struct {
	tests   bool
	dir     string // the work tree
	fs      hostfs.FS
	repo    *gitrepo.Repo // nil when the directory is not in a git work tree
	cmd     command
	timeout time.Duration
	maxOut  int
	junit   string // the JUnit report's path, as given
}

// execute runs the tests or the build.
func (hd *Handler) execute(ctx context.Context, args map[string]any, tests bool) (map[string]any, error) {
	j, nothing, err := hd.prepare(ctx, args, tests)
	if err != nil || j == nil {
		return nothing, err
	}
	log := &capped{max: j.maxOut}
	t := &tally{}
	var w io.Writer = multi{log, t}
	var gj *goJSON
	if j.cmd.goJSON {
		gj = &goJSON{log: log, t: t}
		w = gj
	}
	exit, err := hd.run.Exec(ctx, hostrun.Command{Path: j.cmd.path, Args: j.cmd.args, Dir: j.dir,
		Env: hd.run.Environ(j.dir, nil), Timeout: j.timeout, Output: w})
	if gj != nil {
		gj.finish()
	}
	t.finish()
	data := map[string]any{"log": log.buf.String(), "exit_code": int64(exit.Code()), "truncated": log.dropped > 0,
		"command": j.cmd.display, "junit": j.junit, "skipped_run": false}
	if err != nil {
		var de *hostrun.DirError
		if errors.As(err, &de) {
			return data, fmt.Errorf("with.workdir: %w", de.Err)
		}
		var se *hostrun.StartError
		if errors.As(err, &se) {
			return data, fmt.Errorf("%s: install it, or give another command with.%s", err, j.key())
		}
		data["ok"], data["state"] = false, forge.CheckFailure
		return data, err
	}
	if tests {
		j.counts(t, data)
	}
	ok := exit.Code() == 0
	if n, _ := number.Int(data["failed"]); n > 0 {
		ok = false
	}
	data["ok"], data["state"] = ok, map[bool]string{true: forge.CheckSuccess, false: forge.CheckFailure}[ok]
	hd.record(ctx, j, data)
	return data, nil
}

// key is the with: key of the job's command.
func (j *job) key() string {
	if j.tests {
		return "test_cmd"
	}
	return "build_cmd"
}

// counts sets passed, failed and skipped from the JUnit report, else from
// the output; they are left out when neither has a known shape.
func (j *job) counts(t *tally, data map[string]any) {
	if j.junit != "" {
		path, err := j.fs.Resolve(filepath.Join(j.dir, j.junit))
		if err == nil {
			if b, err := j.fs.ReadFile(path); err == nil {
				if p, f, s, ok := junitCounts(b); ok {
					data["passed"], data["failed"], data["skipped"] = int64(p), int64(f), int64(s)
					return
				}
			}
		}
	}
	if !t.seen {
		if x, ok := inlineJUnit(data["log"].(string)); ok {
			if p, f, s, ok := junitCounts(x); ok {
				data["passed"], data["failed"], data["skipped"] = int64(p), int64(f), int64(s)
			}
		}
		return
	}
	data["passed"], data["failed"], data["skipped"] = int64(t.passed), int64(t.failed), int64(t.skipped)
}

// record stores the run as a check of the work tree's HEAD on the local
// forge (when the repository uses it), so pr_status and remote_status see
// it.
func (hd *Handler) record(ctx context.Context, j *job, data map[string]any) {
	if j.repo == nil {
		return
	}
	sha, err := j.repo.Line(ctx, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil || sha == "" {
		return
	}
	data["sha"] = sha
	env := hd.env(j.fs, j.repo)
	if v, ok, _ := j.repo.Config(ctx, forge.Setting); ok && v != forge.KindLocal {
		return // CI of a GitHub repository is GitHub's
	}
	name, summary := "build", j.cmd.display
	if j.tests {
		name = "tests"
		if p, ok := data["passed"]; ok {
			summary = fmt.Sprintf("%d passed, %d failed (%s)", p, data["failed"], j.cmd.display)
		}
	}
	changes, _ := j.repo.Changes(ctx)
	log := data["log"].(string)
	if len(log) > logTail {
		log = "…" + log[len(log)-logTail:]
	}
	c := forge.Check{Name: name, State: data["state"].(string), SHA: sha, Summary: summary, Log: log, Dirty: len(changes) > 0}
	if err := forge.NewLocal(env).RecordCheck(c); err != nil {
		hd.cfg.Logger.Warn("could not record the check on the local forge", "check", name, "error", err)
	}
}

func (hd *Handler) env(fs hostfs.FS, repo *gitrepo.Repo) forge.Env {
	env := forge.Env{FS: fs, Clock: hd.cfg.Clock, Logger: hd.cfg.Logger, Repo: repo, Git: gitrepo.Tool(hd.cfg.Workspace, hd.cfg.Logger), Lock: hd.cfg.Lock}
	if hd.cfg.GH != "" {
		env.GH = cmdrun.Tool{Program: hd.cfg.GH, Logger: hd.cfg.Logger, Root: hd.cfg.Workspace}
	}
	return env
}

// remoteStatus answers a pull request's CI state from the forge.
func (hd *Handler) remoteStatus(ctx context.Context, args map[string]any) (map[string]any, error) {
	id, _ := args["pr_id"].(string)
	if strings.TrimSpace(id) == "" {
		return nil, errors.New("with.pr_id is required: the pull request (bind pr_id from iface.vcs.open_pr)")
	}
	ws := hd.cfg.Workspace
	if ws.IsZero() {
		return nil, hostfs.ErrNoWorkspace
	}
	fs := hostfs.New(ws)
	repo, err := gitrepo.Open(ctx, gitrepo.Tool(hd.cfg.Workspace, hd.cfg.Logger), ws.Dir(), ws.Dir())
	if err != nil {
		return nil, err
	}
	f, err := forge.Choose(ctx, hd.env(fs, repo), "")
	if err != nil {
		return nil, err
	}
	pr, err := f.Get(ctx, strings.TrimSpace(id))
	if err != nil {
		return nil, err
	}
	d := pr.Data()
	out := map[string]any{"ok": true}
	for _, k := range []string{"pr_id", "state", "checks", "check_runs", "head_sha", "pr_state", "url"} {
		out[k] = d[k]
	}
	return out, nil
}

// multi writes to each writer.
type multi []io.Writer

func (m multi) Write(p []byte) (int, error) {
	for _, w := range m {
		w.Write(p)
	}
	return len(p), nil
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}
