package ci

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/gitrepo"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostfs"
	hostrun "github.com/kitsoki/kitsoki/internal/hosts/run"
)

// command is what a job runs.
type command struct {
	path    string
	args    []string
	display string // the command as a person would type it
	goJSON  bool   // go test -json: the log is rebuilt from its events
	source  string // where it came from: with.test_cmd, git config …, detected …
}

// shell runs a command line with bash -c, target appended as one quoted
// argument.
func shell(line, target, source string) command {
	if target != "" {
		line += " " + quote(target)
	}
	return command{path: hostrun.Shell, args: []string{"-c", line}, display: line, source: source}
}

var plain = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// quote makes s one shell word.
func quote(s string) string {
	if plain.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// prepare reads the call's arguments and picks the command. A build with
// no command configured or detected returns no job and the answer to give
// (ok, nothing to build).
func (hd *Handler) prepare(ctx context.Context, args map[string]any, tests bool) (*job, map[string]any, error) {
	j := &job{tests: tests, fs: hostfs.New(hd.cfg.Workspace), timeout: hostrun.DefaultTimeout, maxOut: hostrun.DefaultMaxOutput}
	dir, err := j.workdir(args)
	if err != nil {
		return nil, nil, err
	}
	j.dir = dir
	if r, err := gitrepo.Open(ctx, gitrepo.Tool(hd.cfg.Workspace, hd.cfg.Logger), dir, hd.cfg.Workspace.Dir()); err == nil {
		j.repo = r
	} else if cmdrun.IsNotFound(err) {
		return nil, nil, err
	}
	if err := j.limits(args); err != nil {
		return nil, nil, err
	}
	target, err := str(args, "target")
	if err != nil {
		return nil, nil, err
	}
	if j.junit, err = str(args, "junit"); err != nil {
		return nil, nil, err
	}
	cmd, ok, err := hd.pick(ctx, j, args, target)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, map[string]any{"ok": true, "state": "success", "skipped_run": true, "command": "", "exit_code": int64(0), "truncated": false,
			"log": fmt.Sprintf("no build command: none is given (with.build_cmd), configured (git config %s) or detected in %s; nothing was built", BuildSetting, dir)}, nil
	}
	j.cmd = cmd
	return j, nil, nil
}

// workdir is with.workdir inside the workspace (default its directory),
// an existing directory.
func (j *job) workdir(args map[string]any) (string, error) {
	name, err := str(args, "workdir")
	if err != nil {
		return "", err
	}
	if name == "" {
		name = "."
	}
	dir, err := j.fs.Resolve(name)
	if err != nil {
		return "", fmt.Errorf("with.workdir %w", err)
	}
	fi, err := j.fs.Stat(dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("with.workdir %q does not exist (%s): create the work tree first (iface.workspace.create), or name an existing directory", name, dir)
	case !fi.IsDir():
		return "", fmt.Errorf("with.workdir %q is not a directory", name)
	}
	return dir, nil
}

// limits reads with.timeout and with.max_output.
func (j *job) limits(args map[string]any) error {
	if v, ok := args["timeout"]; ok && v != nil && v != "" {
		d, err := host.ParseTimeout(v)
		if err != nil {
			return fmt.Errorf("with.timeout: %w", err)
		}
		j.timeout = d
	}
	if v, ok := args["max_output"]; ok && v != nil {
		n, ok := v.(int64)
		if f, isF := v.(float64); isF && f == float64(int64(f)) {
			n, ok = int64(f), true
		}
		if i, isI := v.(int); isI {
			n, ok = int64(i), true
		}
		if !ok || n <= 0 {
			return fmt.Errorf("with.max_output must be a positive whole number of bytes, got %v", v)
		}
		j.maxOut = int(n)
	}
	return nil
}

// pick chooses the command: with.<test|build>_cmd, else the repository's
// git config kitsoki.ci.<test|build>, else one detected from the project's
// files (go.mod, Cargo.toml, package.json, a Makefile target, pytest).
func (hd *Handler) pick(ctx context.Context, j *job, args map[string]any, target string) (command, bool, error) {
	key, setting := "build_cmd", BuildSetting
	if j.tests {
		key, setting = "test_cmd", TestSetting
	}
	given, err := str(args, key)
	if err != nil {
		return command{}, false, err
	}
	if given != "" {
		return shell(given, target, "with."+key), true, nil
	}
	if j.repo != nil {
		if v, ok, err := j.repo.Config(ctx, setting); err != nil {
			return command{}, false, err
		} else if ok && strings.TrimSpace(v) != "" {
			return shell(strings.TrimSpace(v), target, "git config "+setting), true, nil
		}
	}
	if c, ok := j.detect(target); ok {
		return c, true, nil
	}
	if j.tests {
		return command{}, false, fmt.Errorf("no test command for %s: give with.test_cmd, set one with git config %s \"make test\", or add a go.mod, Cargo.toml, package.json test script, Makefile test target or pytest configuration", j.dir, TestSetting)
	}
	return command{}, false, nil
}

// detect guesses the command from the project's files.
func (j *job) detect(target string) (command, bool) {
	has := func(name string) bool {
		_, err := j.fs.Stat(filepath.Join(j.dir, name))
		return err == nil
	}
	withTarget := func(c command, def string) command {
		t := def
		if target != "" {
			t = target
		}
		if t != "" {
			c.args = append(c.args, t)
			c.display += " " + t
		}
		return c
	}
	switch {
	case has("go.mod") && j.tests:
		c := withTarget(command{path: "go", args: []string{"test", "-json"}, display: "go test", goJSON: true, source: "detected go.mod"}, "./...")
		return c, true
	case has("go.mod"):
		return withTarget(command{path: "go", args: []string{"build"}, display: "go build", source: "detected go.mod"}, "./..."), true
	case has("Cargo.toml"):
		verb := map[bool]string{true: "test", false: "build"}[j.tests]
		return withTarget(command{path: "cargo", args: []string{verb}, display: "cargo " + verb, source: "detected Cargo.toml"}, ""), true
	}
	if script, ok := j.npmScript(); ok {
		c := command{path: "npm", args: []string{"run", script}, display: "npm run " + script, source: "detected package.json"}
		if target != "" {
			c.args, c.display = append(c.args, "--", target), c.display+" -- "+target
		}
		return c, true
	}
	if t, ok := j.makeTarget(); ok {
		return command{path: "make", args: []string{t}, display: "make " + t, source: "detected Makefile"}, true
	}
	if j.tests && (has("pytest.ini") || has("pyproject.toml") || has("setup.cfg") || has("conftest.py")) {
		return withTarget(command{path: "python3", args: []string{"-m", "pytest"}, display: "python3 -m pytest", source: "detected a Python project"}, ""), true
	}
	return command{}, false
}

// npmScript is package.json's test (or build) script, when it has one.
func (j *job) npmScript() (string, bool) {
	b, err := j.fs.ReadFile(filepath.Join(j.dir, "package.json"))
	if err != nil {
		return "", false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return "", false
	}
	name := map[bool]string{true: "test", false: "build"}[j.tests]
	_, ok := pkg.Scripts[name]
	return name, ok
}

// makeTarget is the Makefile's test (or build) target, when it has one.
func (j *job) makeTarget() (string, bool) {
	b, err := j.fs.ReadFile(filepath.Join(j.dir, "Makefile"))
	if err != nil || len(b) == 0 {
		return "", false
	}
	want := []string{"build", "all"}
	if j.tests {
		want = []string{"test", "check"}
	}
	for _, t := range want {
		if regexp.MustCompile(`(?m)^` + t + `\s*:`).Match(b) {
			return t, true
		}
	}
	return "", false
}

// str reads with.<key> as a string, trimmed; absent or null is "".
func str(args map[string]any, key string) (string, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("with.%s must be a string, got %T", key, v)
	}
	return strings.TrimSpace(s), nil
}
