//go:build unix

package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

func newWS(t testing.TB) workspace.Root {
	t.Helper()
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func invoke(t testing.TB, hd *Handler, ctx context.Context, args map[string]any) *host.Result {
	t.Helper()
	res, err := hd.Invoke(ctx, &host.Call{Namespace: Name, Args: args})
	if err != nil {
		t.Fatalf("Invoke: infrastructure error %v", err)
	}
	return res
}

func resultField(s catalog.Spec, name string) (catalog.Field, bool) {
	for _, f := range s.Results {
		if f.Name == name {
			return f, true
		}
	}
	return catalog.Field{}, false
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestRunResults(t *testing.T) {
	ws := newWS(t)
	if err := os.Mkdir(filepath.Join(ws.Dir(), "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	hd := New(Config{Workspace: ws, Environ: func() []string { return []string{"KEEP=kept", "OVER=old"} }})
	tests := []struct {
		name string
		args map[string]any
		want map[string]any
		err  string
	}{
		{"argv output and exit", map[string]any{"cmd": "printf", "args": []any{"%s|%s", "a b", int64(3)}},
			map[string]any{"stdout": "a b|3", "exit_code": int64(0), "ok": true, "truncated": false}, ""},
		{"templated shell syntax stays one argument", map[string]any{"cmd": "printf", "args": []any{"<%s>", "x; rm -rf . && echo pwned"}},
			map[string]any{"stdout": "<x; rm -rf . && echo pwned>", "exit_code": int64(0), "ok": true, "truncated": false}, ""},
		{"shell mode, stderr interleaved", map[string]any{"cmd": "echo out; echo err >&2; exit 2"},
			map[string]any{"stdout": "out\nerr\n", "exit_code": int64(2), "ok": false, "truncated": false}, ""},
		{"fail_on_error", map[string]any{"cmd": "exit 2", "fail_on_error": true},
			map[string]any{"stdout": "", "exit_code": int64(2), "ok": false, "truncated": false},
			"host.run: command ended with exit status 2 (with.fail_on_error is set)"},
		{"stdout_json from the last line", map[string]any{"cmd": "echo log; echo '{\"n\": 3, \"f\": 1.5, \"l\": [1]}'; echo"},
			map[string]any{"stdout": "log\n{\"n\": 3, \"f\": 1.5, \"l\": [1]}\n\n", "exit_code": int64(0), "ok": true, "truncated": false,
				"stdout_json": map[string]any{"n": int64(3), "f": 1.5, "l": []any{int64(1)}}}, ""},
		{"stdout_json printed over several lines (jq's default)", map[string]any{"cmd": "echo log; printf '{\\n  \"ok\": true,\\n  \"l\": [\\n    1\\n  ]\\n}\\n'"},
			map[string]any{"stdout": "log\n{\n  \"ok\": true,\n  \"l\": [\n    1\n  ]\n}\n", "exit_code": int64(0), "ok": true, "truncated": false,
				"stdout_json": map[string]any{"ok": true, "l": []any{int64(1)}}}, ""},
		{"a closing brace without its document", map[string]any{"cmd": "echo '{ not json'; echo '}'"},
			map[string]any{"stdout": "{ not json\n}\n", "exit_code": int64(0), "ok": true, "truncated": false}, ""},
		{"stdout_json_parse_error", map[string]any{"cmd": "echo '{\"n\": '"},
			map[string]any{"stdout": "{\"n\": \n", "exit_code": int64(0), "ok": true, "truncated": false,
				"stdout_json_parse_error": "unexpected EOF"}, ""},
		{"plain text is not JSON", map[string]any{"cmd": "echo hello"},
			map[string]any{"stdout": "hello\n", "exit_code": int64(0), "ok": true, "truncated": false}, ""},
		{"output capped", map[string]any{"cmd": "head -c 5000 /dev/zero | tr '\\0' a", "max_output": int64(10)},
			map[string]any{"stdout": "aaaaaaaaaa", "exit_code": int64(0), "ok": true, "truncated": true}, ""},
		{"env added to the inherited environment", map[string]any{"cmd": "echo $KEEP $OVER $NEW", "env": map[string]any{"OVER": "new", "NEW": int64(1)}},
			map[string]any{"stdout": "kept new 1\n", "exit_code": int64(0), "ok": true, "truncated": false}, ""},
		{"cwd inside the workspace, PWD set", map[string]any{"cmd": "basename \"$(pwd)\"; basename \"$PWD\"", "cwd": "sub"},
			map[string]any{"stdout": "sub\nsub\n", "exit_code": int64(0), "ok": true, "truncated": false}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := invoke(t, hd, context.Background(), tt.args)
			if diff := cmp.Diff(tt.want, res.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			// The catalog says its results are complete (a bind of any
			// other field is a load error): every field returned is there.
			spec, _ := catalog.Lookup(Name)
			for k := range res.Data {
				if _, ok := resultField(spec, k); !ok || !spec.ResultsComplete {
					t.Errorf("data field %q is not one of the catalog's complete results", k)
				}
			}
			if got := errText(res.Err); got != tt.err {
				t.Errorf("error = %q, want %q", got, tt.err)
			}
		})
	}
}

func TestRunArgumentErrors(t *testing.T) {
	ws := newWS(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hd := New(Config{Workspace: ws})
	tests := []struct {
		name string
		args map[string]any
		err  string
	}{
		{"no cmd", map[string]any{}, "host.run: with.cmd is required: the program to run (with with.args) or a bash command"},
		{"unknown key", map[string]any{"cmd": "true", "tiemout": "1s"},
			"host.run: with.tiemout is not a host.run field (fields: cmd, args, cwd, env, fail_on_error, timeout, max_output)"},
		{"args not a list", map[string]any{"cmd": "true", "args": "x"}, "host.run: with.args must be a list of arguments, got a string"},
		{"args element a map", map[string]any{"cmd": "true", "args": []any{"a", map[string]any{}}},
			"host.run: with.args[1]: expected a string, number or boolean, got a mapping"},
		{"cwd outside", map[string]any{"cmd": "true", "cwd": ".."},
			fmt.Sprintf("host.run: with.cwd \"..\" is outside the workspace %s (widen the workspace with --workspace DIR)", ws.Dir())},
		{"cwd absolute outside", map[string]any{"cmd": "true", "cwd": "/"},
			fmt.Sprintf("host.run: with.cwd \"/\" is outside the workspace %s (widen the workspace with --workspace DIR)", ws.Dir())},
		{"cwd not a directory", map[string]any{"cmd": "true", "cwd": "file"}, "host.run: with.cwd \"file\" is not a directory"},
		{"bad timeout", map[string]any{"cmd": "true", "timeout": "soon"},
			"host.run: with.timeout: \"soon\" is not a duration: write e.g. 30s, 2m or a number of seconds"},
		{"zero timeout", map[string]any{"cmd": "true", "timeout": int64(0)}, "host.run: with.timeout: 0 is not a positive duration"},
		{"bad max_output", map[string]any{"cmd": "true", "max_output": "big"},
			"host.run: with.max_output must be a positive number of bytes, got big"},
		{"bad env", map[string]any{"cmd": "true", "env": []any{"A=1"}},
			"host.run: with.env must be a mapping of variable names to values, got a list"},
		{"bad env name", map[string]any{"cmd": "true", "env": map[string]any{"A=B": "1"}}, "host.run: with.env: \"A=B\" is not a variable name"},
		{"bad fail_on_error", map[string]any{"cmd": "true", "fail_on_error": "yes"},
			"host.run: with.fail_on_error must be true or false, got a string"},
		{"program missing", map[string]any{"cmd": "no-such-program-kitsoki", "args": []any{}},
			"host.run: start \"no-such-program-kitsoki\": exec: \"no-such-program-kitsoki\": executable file not found in $PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := invoke(t, hd, context.Background(), tt.args)
			if got := errText(res.Err); got != tt.err {
				t.Errorf("error = %q\n want %q", got, tt.err)
			}
			if res.Data["ok"] != false {
				t.Errorf("ok = %v, want false", res.Data["ok"])
			}
		})
	}
}

func TestArgvNeverRunsShellSyntax(t *testing.T) {
	ws := newWS(t)
	victim := filepath.Join(ws.Dir(), "victim")
	if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	hd := New(Config{Workspace: ws})
	arg := "; rm -rf victim; touch pwned #"
	res := invoke(t, hd, context.Background(), map[string]any{"cmd": "echo", "args": []any{arg}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := res.Data["stdout"]; got != arg+"\n" {
		t.Errorf("stdout = %q, want the argument echoed as one element", got)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("victim removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "pwned")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pwned exists: the argument was run as shell syntax")
	}
}

// waitPidFile waits for the shell to write its grandchild's pid.
func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	for range 1000 {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never written", path)
	return 0
}

// gone reports whether pid no longer runs (absent, or a zombie nobody has
// reaped yet).
func gone(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// GrandchildGone fails unless pid ends soon.
func GrandchildGone(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		if gone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("grandchild %d still runs after the call ended", pid)
}

const spawnGrandchild = "sleep 300 & echo $! > grandchild.pid; wait"

func TestTimeoutStopsTheProcessGroup(t *testing.T) {
	ws := newWS(t)
	fake := clock.NewFake(time.Unix(0, 0))
	hd := New(Config{Workspace: ws, Clock: fake})
	done := make(chan *host.Result)
	go func() {
		res, _ := hd.Invoke(context.Background(), &host.Call{Namespace: Name, Args: map[string]any{"cmd": spawnGrandchild, "timeout": "5s"}})
		done <- res
	}()
	pid := waitPidFile(t, filepath.Join(ws.Dir(), "grandchild.pid"))
	fake.Advance(4 * time.Second)
	select {
	case <-done:
		t.Fatal("the call ended before its timeout")
	case <-time.After(50 * time.Millisecond):
	}
	fake.Advance(time.Second)
	res := <-done
	if want := "host.run: command timed out after 5s (with.timeout); its process group was stopped (signal: terminated)"; errText(res.Err) != want {
		t.Errorf("error = %q, want %q", errText(res.Err), want)
	}
	if res.Data["ok"] != false || res.Data["exit_code"] != int64(-1) {
		t.Errorf("data = %v, want ok false, exit_code -1", res.Data)
	}
	GrandchildGone(t, pid)
}

func TestCancelStopsTheProcessGroup(t *testing.T) {
	ws := newWS(t)
	hd := New(Config{Workspace: ws})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *host.Result)
	go func() {
		res, _ := hd.Invoke(ctx, &host.Call{Namespace: Name, Args: map[string]any{"cmd": spawnGrandchild}})
		done <- res
	}()
	pid := waitPidFile(t, filepath.Join(ws.Dir(), "grandchild.pid"))
	cancel()
	res := <-done
	if want := "host.run: command stopped: the run was cancelled (signal: terminated): context canceled"; errText(res.Err) != want {
		t.Errorf("error = %q, want %q", errText(res.Err), want)
	}
	GrandchildGone(t, pid)
}

func TestLeftoverGrandchildIsKilled(t *testing.T) {
	ws := newWS(t)
	hd := New(Config{Workspace: ws, Grace: 100 * time.Millisecond})
	// The shell exits at once; the sleep it left in its group is killed
	// once the shell is reaped.
	res := invoke(t, hd, context.Background(), map[string]any{"cmd": "sleep 300 >/dev/null 2>&1 & echo $! > grandchild.pid"})
	if res.Err != nil || res.Data["ok"] != true {
		t.Fatalf("res = %v, %v", res.Data, res.Err)
	}
	GrandchildGone(t, waitPidFile(t, filepath.Join(ws.Dir(), "grandchild.pid")))
}

func BenchmarkHostRun(b *testing.B) {
	hd := New(Config{Workspace: newWS(b)})
	args := map[string]any{"cmd": "true", "args": []any{}}
	ctx := context.Background()
	for b.Loop() {
		res, err := hd.Invoke(ctx, &host.Call{Namespace: Name, Args: args})
		if err != nil || res.Err != nil {
			b.Fatal(err, res.Err)
		}
	}
}

// BenchmarkExecTrue is the floor of BenchmarkHostRun: starting a process.
func BenchmarkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCatalogStatesTheDefaults keeps `kitsoki hosts` in step with the
// handler's defaults.
func TestCatalogStatesTheDefaults(t *testing.T) {
	spec, _ := catalog.Lookup(Name)
	for field, want := range map[string]string{
		"timeout":    "default " + strings.TrimSuffix(DefaultTimeout.String(), "0s"),
		"max_output": "default " + strconv.Itoa(DefaultMaxOutput),
	} {
		f, _ := spec.Field(field)
		if !strings.Contains(f.Doc, want) {
			t.Errorf("catalog %s doc %q lacks %q", field, f.Doc, want)
		}
	}
}
