// Package run is the host.run handler: it runs a program with arguments
// (argv mode, no shell) or a bash command (shell mode) in a directory
// inside the workspace, through the process supervisor, and returns its
// output and exit status.
package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/base/supervise"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Name is the invoke name of the handler.
const Name = "host.run"

// DefaultTimeout is how long a command may run when with.timeout is not
// set.
const DefaultTimeout = 10 * time.Minute

// DefaultMaxOutput is how many bytes of output a call keeps when
// with.max_output is not set: 1 MiB.
const DefaultMaxOutput = 1 << 20

// Shell runs the command of shell mode as `bash -c CMD`.
const Shell = "bash"

// Config is what the handler needs of the run.
type Config struct {
	// Workspace confines with.cwd; the default working directory is its
	// directory.
	Workspace workspace.Root
	// Clock measures with.timeout; nil is the system clock.
	Clock clock.Clock
	// Logger receives the supervisor's warnings; nil discards them.
	Logger *slog.Logger
	// Environ is the environment commands inherit; nil is os.Environ.
	Environ func() []string
	// Grace is how long a command that outlived its timeout or whose run
	// was cancelled has after SIGTERM before its group gets SIGKILL; zero
	// is supervise.DefaultGrace.
	Grace time.Duration
}

// Handler is host.run.
type Handler struct{ cfg Config }

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Environ == nil {
		cfg.Environ = os.Environ
	}
	return &Handler{cfg: cfg}
}

// Register installs host.run on h.
func Register(h *host.Host, cfg Config) { h.Register(Name, New(cfg)) }

// request is a call's with: map, checked.
type request struct {
	argv      bool
	cmd       string
	args      []string
	dir       string
	env       map[string]string
	failOnErr bool
	timeout   time.Duration
	maxOutput int
}

// Invoke runs the command. Bad arguments, a command that cannot start, a
// timeout and (with fail_on_error) a non-zero exit are errors of the call
// (Result.Err, so on_error fires); the data of a command that ran is
// returned with them.
func (hd *Handler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	req, err := hd.parse(call.Args)
	if err != nil {
		return &host.Result{Data: failData(""), Err: fmt.Errorf("%s: %w", Name, err)}, nil
	}
	return hd.run(ctx, req), nil
}

func failData(out string) map[string]any {
	return map[string]any{"stdout": out, "exit_code": int64(-1), "ok": false, "truncated": false}
}

func (hd *Handler) parse(args map[string]any) (*request, error) {
	spec, _ := catalog.Lookup(Name)
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if _, ok := spec.Field(k); !ok && k != "call" {
			return nil, fmt.Errorf("with.%s is not a host.run field (fields: %s)", k, fieldNames(spec))
		}
	}
	req := &request{timeout: DefaultTimeout, maxOutput: DefaultMaxOutput}
	cmd, ok := args["cmd"].(string)
	if !ok || strings.TrimSpace(cmd) == "" {
		return nil, errors.New("with.cmd is required: the program to run (with with.args) or a bash command")
	}
	req.cmd = cmd
	if raw, ok := args["args"]; ok && raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return nil, fmt.Errorf("with.args must be a list of arguments, got %s", typeName(raw))
		}
		req.argv = true
		req.args = make([]string, len(list))
		for i, a := range list {
			s, err := scalar(a)
			if err != nil {
				return nil, fmt.Errorf("with.args[%d]: %w", i, err)
			}
			req.args[i] = s
		}
	}
	dir, err := hd.cwd(args["cwd"])
	if err != nil {
		return nil, err
	}
	req.dir = dir
	if raw, ok := args["env"]; ok && raw != nil {
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("with.env must be a mapping of variable names to values, got %s", typeName(raw))
		}
		req.env = make(map[string]string, len(m))
		for k, v := range m {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, fmt.Errorf("with.env: %q is not a variable name", k)
			}
			s, err := scalar(v)
			if err != nil {
				return nil, fmt.Errorf("with.env.%s: %w", k, err)
			}
			req.env[k] = s
		}
	}
	if raw, ok := args["fail_on_error"]; ok && raw != nil {
		b, ok := raw.(bool)
		if !ok {
			return nil, fmt.Errorf("with.fail_on_error must be true or false, got %s", typeName(raw))
		}
		req.failOnErr = b
	}
	if raw, ok := args["timeout"]; ok && raw != nil {
		d, err := parseDuration(raw)
		if err != nil {
			return nil, fmt.Errorf("with.timeout: %w", err)
		}
		req.timeout = d
	}
	if raw, ok := args["max_output"]; ok && raw != nil {
		n, ok := number.Whole(raw)
		if !ok || n < 1 {
			return nil, fmt.Errorf("with.max_output must be a positive number of bytes, got %v", raw)
		}
		req.maxOutput = int(n)
	}
	return req, nil
}

// cwd resolves with.cwd inside the workspace: relative to the workspace
// directory, symlinks resolved, an existing directory.
func (hd *Handler) cwd(raw any) (string, error) {
	ws := hd.cfg.Workspace
	if raw == nil || raw == "" {
		if ws.IsZero() {
			return "", errors.New("no workspace is set for this run, so host.run has no directory to run in")
		}
		return ws.Dir(), nil
	}
	name, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("with.cwd must be a directory path, got %s", typeName(raw))
	}
	if ws.IsZero() {
		return "", errors.New("no workspace is set for this run, so with.cwd cannot be checked")
	}
	real, err := ws.Resolve(ws.Dir(), name)
	if err != nil {
		return "", fmt.Errorf("with.cwd %w", err)
	}
	fi, err := os.Stat(real)
	switch {
	case err != nil:
		return "", fmt.Errorf("with.cwd %q: %w", name, err)
	case !fi.IsDir():
		return "", fmt.Errorf("with.cwd %q is not a directory", name)
	}
	return real, nil
}

func (hd *Handler) run(ctx context.Context, req *request) *host.Result {
	path, args := req.cmd, req.args
	if !req.argv {
		path, args = Shell, []string{"-c", req.cmd}
	}
	out := &capped{max: req.maxOutput}
	exit, err := hd.Exec(ctx, Command{Path: path, Args: args, Dir: req.dir, Env: hd.environ(req), Timeout: req.timeout, Output: out})
	var de *DirError
	if errors.As(err, &de) {
		return &host.Result{Data: failData(""), Err: fmt.Errorf("%s: with.cwd: %w", Name, de.Err)}
	}
	code := exit.Code()
	data := map[string]any{"stdout": out.buf.String(), "exit_code": int64(code), "ok": code == 0, "truncated": out.dropped > 0}
	if err == nil {
		parseJSON(out.buf.Bytes(), data)
	}
	var se *StartError
	switch {
	case errors.As(err, &se):
		if errors.Is(se.Err, exec.ErrNotFound) && !req.argv {
			return &host.Result{Data: failData(""), Err: fmt.Errorf("%s: shell mode runs %s -c, and %w: install bash, or give with.args to run cmd directly", Name, Shell, se.Err)}
		}
		return &host.Result{Data: failData(""), Err: fmt.Errorf("%s: %w", Name, err)}
	case err != nil:
		parseJSON(out.buf.Bytes(), data)
		data["ok"] = false
		return &host.Result{Data: data, Err: fmt.Errorf("%s: %w", Name, err)}
	case code != 0 && req.failOnErr:
		return &host.Result{Data: data, Err: fmt.Errorf("%s: command ended with %s (with.fail_on_error is set)", Name, exit)}
	}
	return &host.Result{Data: data}
}

// Command is one command run host.run's way.
type Command struct {
	Path string   // the program; a name without a slash is looked up in PATH
	Args []string // its arguments
	Dir  string   // the working directory: inside the workspace, opened through its root (workspace.CommandDir)
	Env  []string // the whole environment
	// Timeout is how long it may run; 0 is DefaultTimeout.
	Timeout time.Duration
	// Output receives stdout and stderr, interleaved as written; cap it
	// (the command is never blocked by it).
	Output io.Writer
}

// StartError is a command that could not start.
type StartError struct {
	Path string
	Err  error
}

func (e *StartError) Error() string { return fmt.Sprintf("start %q: %v", e.Path, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// DirError is a working directory that could not be opened through the
// workspace root (gone, not a directory, or swapped for a symlink leading
// out of the workspace): the command was not started.
type DirError struct {
	Dir string
	Err error
}

func (e *DirError) Error() string { return fmt.Sprintf("working directory %s: %v", e.Dir, e.Err) }
func (e *DirError) Unwrap() error { return e.Err }

// Exec runs c through the process supervisor as host.run runs its
// commands: its own process group, stopped (SIGTERM, then SIGKILL after
// the grace period) when the timeout passes or ctx ends, and reaped. The
// error is a *StartError, a timeout (naming with.timeout) or a cancelled
// run; a non-zero exit is not an error (read exit.Code()).
func (hd *Handler) Exec(ctx context.Context, c Command) (supervise.Exit, error) {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	// The deadline starts before the command does: a test's fake clock can
	// then move as soon as the command shows it runs, with the timer there.
	dir, release, err := hd.cfg.Workspace.CommandDir(c.Dir)
	if err != nil {
		return supervise.Exit{}, &DirError{Dir: c.Dir, Err: err}
	}
	tctx, cancel := clock.WithTimeoutCause(ctx, hd.cfg.Clock, c.Timeout, errTimeout)
	defer cancel()
	p, err := supervise.Start(supervise.Config{
		Name: Name, Path: c.Path, Args: c.Args, Dir: dir, Env: c.Env,
		Stdout: c.Output, Stderr: c.Output, Grace: hd.cfg.Grace, Logger: hd.cfg.Logger,
	})
	release() // the child changed into the directory before it started
	if err != nil {
		return supervise.Exit{}, &StartError{Path: c.Path, Err: err}
	}
	exit, werr := p.Wait(tctx)
	switch {
	case werr != nil && errors.Is(context.Cause(tctx), errTimeout) && ctx.Err() == nil:
		return exit, fmt.Errorf("command timed out after %s (with.timeout); its process group was stopped (%s)", c.Timeout, exit)
	case werr != nil:
		return exit, fmt.Errorf("command stopped: the run was cancelled (%s): %w", exit, werr)
	}
	return exit, nil
}

// Environ is kitsoki's environment for a command (the handler's base) with
// env over it and PWD set to dir.
func (hd *Handler) Environ(dir string, env map[string]string) []string {
	return hd.environ(&request{dir: dir, env: env})
}

var errTimeout = errors.New("host.run timeout")

// environ is the inherited environment with with.env over it, and PWD set
// to the working directory as a shell sets it.
func (hd *Handler) environ(req *request) []string {
	base := hd.cfg.Environ()
	over := map[string]string{"PWD": req.dir}
	for k, v := range req.env {
		over[k] = v
	}
	env := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; !ok {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(over))
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+over[k])
	}
	return env
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

// parseJSON sets stdout_json when the last non-empty line of out is one
// JSON document, or stdout_json_parse_error when it starts like one ({ or
// [) and does not parse.
func parseJSON(out []byte, data map[string]any) {
	lines := bytes.Split(out, []byte("\n"))
	end := len(lines) - 1
	for end >= 0 && len(bytes.TrimSpace(lines[end])) == 0 {
		end--
	}
	if end < 0 {
		return
	}
	last := bytes.TrimSpace(lines[end])
	v, err := oneDocument(last)
	if err == nil {
		data["stdout_json"] = normalize(v)
		return
	}
	// A document printed over several lines (jq's default output): the
	// text from the last line that opens one at its start to the end.
	if c := last[0]; c == '}' || c == ']' {
		for i := end - 1; i >= 0; i-- {
			l := lines[i]
			if len(l) == 0 || (l[0] != '{' && l[0] != '[') {
				continue
			}
			if v, err := oneDocument(bytes.Join(lines[i:end+1], []byte("\n"))); err == nil {
				data["stdout_json"] = normalize(v)
				return
			}
		}
	}
	if last[0] == '{' || last[0] == '[' {
		data["stdout_json_parse_error"] = err.Error()
	}
}

// oneDocument decodes b as exactly one JSON document (numbers kept as
// json.Number).
func oneDocument(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	err := dec.Decode(&v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON document on the line")
	}
	return v, err
}

// normalize turns json.Numbers into int64 when they are integers, float64
// otherwise, as world values are typed.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// scalar writes out a string, number or boolean argument.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("expected a string, number or boolean, got %s", typeName(v))
}

// parseDuration reads a duration string (30s, 2m) or a number of seconds.
func parseDuration(v any) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			if f, ferr := strconv.ParseFloat(x, 64); ferr == nil {
				d = time.Duration(f * float64(time.Second))
			} else {
				return 0, fmt.Errorf("%q is not a duration: write e.g. 30s, 2m or a number of seconds", x)
			}
		}
	case int, int64, float64:
		f, _ := number.Float(x)
		if f > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%v seconds is too long", x)
		}
		d = time.Duration(f * float64(time.Second))
	default:
		return 0, fmt.Errorf("expected a duration such as 30s or a number of seconds, got %s", typeName(v))
	}
	if d <= 0 {
		return 0, fmt.Errorf("%v is not a positive duration", v)
	}
	return d, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func fieldNames(s catalog.Spec) string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
