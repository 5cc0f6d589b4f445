package starlark

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// fixture is a workspace with a story directory (story/) in it.
type fixture struct {
	t   testing.TB
	ws  string
	st  *story.Story
	dir string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ws := t.TempDir()
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	root, err := workspace.New(real)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(real, "story")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ws: real, dir: dir, st: &story.Story{Dir: dir, Workspace: root}}
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	testkit.WriteFile(f.t, f.ws, rel, content)
}

// script writes story/<name>.star and its sidecar.
func (f *fixture) script(name, src, sidecar string) string {
	f.write("story/"+name+".star", src)
	f.write("story/"+name+".star.yaml", sidecar)
	return name + ".star"
}

func call(script string, inputs map[string]any, world map[string]any) *host.Call {
	args := map[string]any{"script": script, "call": "c1"}
	if inputs != nil {
		args["inputs"] = inputs
	}
	return &host.Call{Namespace: Name, Args: args, World: world}
}

// outcome runs one call and returns its data or its domain error's text.
func outcome(t *testing.T, h *Handler, c *host.Call) (map[string]any, string) {
	t.Helper()
	res, err := h.Invoke(context.Background(), c)
	if err != nil {
		t.Fatalf("infrastructure error: %v", err)
	}
	if res.Err != nil {
		var de *Error
		if !errors.As(res.Err, &de) {
			t.Fatalf("domain error %T is not a *starlark.Error", res.Err)
		}
		return res.Data, res.Err.Error()
	}
	return res.Data, ""
}

func TestInvoke(t *testing.T) {
	f := newFixture(t)
	f.write("data/a.txt", "alpha")
	f.write("data/b.txt", "beta")
	f.write("story/notes.md", "n")
	if err := os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("top secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(f.ws, "data", "link.txt")); err != nil {
		t.Fatal(err)
	}
	const anyOut = "outputs: {}\n"
	tests := []struct {
		name    string
		src     string
		sidecar string
		inputs  map[string]any
		world   map[string]any
		want    map[string]any
		err     string
	}{
		{name: "typed inputs in, outputs out",
			src:     "def main(ctx):\n    return {'twice': ctx.inputs['n'] * 2, 'who': ctx.inputs['who'].upper(), 'f': 1.5, 'l': [1, None, True], 'd': {'k': 'v'}}\n",
			sidecar: "inputs:\n  n: {type: int, required: true}\n  who: {type: string}\noutputs:\n  twice: {type: int}\n  who: {type: string}\n  f: {type: number}\n  l: {type: list}\n  d: {type: object}\n",
			inputs:  map[string]any{"n": int64(21), "who": "ada"},
			want:    map[string]any{"twice": int64(42), "who": "ADA", "f": 1.5, "l": []any{int64(1), nil, true}, "d": map[string]any{"k": "v"}}},
		{name: "world snapshot, read-only",
			src:     "def main(ctx):\n    return {'city': ctx.world.get('city'), 'none': ctx.world.get('nope')}\n",
			sidecar: anyOut, world: map[string]any{"city": "Oslo"},
			want: map[string]any{"city": "Oslo", "none": nil}},
		{name: "fs read, exists and glob inside the workspace",
			src:     "def main(ctx):\n    return {'a': ctx.fs.read('data/a.txt'), 'e': ctx.fs.exists('data/b.txt'), 'n': ctx.fs.exists('data/c.txt'), 'g': ctx.fs.glob('data/*.txt')}\n",
			sidecar: anyOut,
			want:    map[string]any{"a": "alpha", "e": true, "n": false, "g": []any{"data/a.txt", "data/b.txt"}}},
		{name: "fs read through a symlink out of the workspace",
			src: "def main(ctx):\n    return {'s': ctx.fs.read('data/link.txt')}\n", sidecar: anyOut,
			err: `host.starlark.run: s.star: s.star:2:29: ctx.fs.read: "data/link.txt" leads through a symlink to ` + filepath.Join(outside, "secret.txt")},
		{name: "fs read with ..",
			src: "def main(ctx):\n    return {'s': ctx.fs.read('../x')}\n", sidecar: anyOut,
			err: `host.starlark.run: s.star: s.star:2:29: ctx.fs.read: "../x" is outside the workspace ` + f.ws},
		{name: "fs glob out of the workspace",
			src: "def main(ctx):\n    return {'s': ctx.fs.glob('../*')}\n", sidecar: anyOut,
			err: `host.starlark.run: s.star: s.star:2:29: ctx.fs.glob: "../x" is outside the workspace ` + f.ws},
		{name: "no ctx.env",
			src: "def main(ctx):\n    return {'h': ctx.env}\n", sidecar: anyOut,
			err: "host.starlark.run: s.star: s.star:2:21: ctx has no .env field or method"},
		{name: "no time module",
			src: "def main(ctx):\n    return {'t': time.now()}\n", sidecar: anyOut,
			err: "host.starlark.run: s.star: s.star:2:18: undefined: time"},
		{name: "no load",
			src: "load('x.star', 'y')\ndef main(ctx):\n    return {}\n", sidecar: anyOut,
			err: "host.starlark.run: s.star: s.star:1:1: cannot load x.star: load() is not available: a script is one file, with json and math predeclared"},
		{name: "json and math predeclared",
			src: "def main(ctx):\n    return {'j': json.decode('[1,2]'), 'm': math.floor(2.7)}\n", sidecar: anyOut,
			want: map[string]any{"j": []any{int64(1), int64(2)}, "m": int64(2)}},
		{name: "no main",
			src: "x = 1\n", sidecar: anyOut, err: "host.starlark.run: s.star: the script defines no main(ctx) function"},
		{name: "main returns no dict",
			src: "def main(ctx):\n    return [1]\n", sidecar: anyOut, err: "host.starlark.run: s.star: main(ctx) must return a dict of outputs, got list"},
		{name: "a function cannot leave",
			src: "def main(ctx):\n    return {'f': main}\n", sidecar: anyOut,
			err: "host.starlark.run: s.star: the returned dict: f: a function cannot leave the script (return strings, numbers, bools, None, lists and dicts)"},
		{name: "fail()",
			src: "def main(ctx):\n    fail('widget %d: status %d' % (42, 404))\n", sidecar: anyOut,
			err: "host.starlark.run: s.star: s.star:2:9: fail: widget 42: status 404"},
		{name: "syntax error",
			src: "def main(ctx)\n    return {}\n", sidecar: anyOut, err: "host.starlark.run: s.star: s.star:2:1: got newline, want ':'"},
		{name: "recursion is off",
			src: "def main(ctx):\n    return main(ctx)\n", sidecar: anyOut,
			err: "host.starlark.run: s.star: s.star:2:12: function main called recursively"},
		{name: "missing required input",
			src: "def main(ctx):\n    return {}\n", sidecar: "inputs:\n  n: {type: int, required: true}\n",
			err: `host.starlark.run: s.star: input "n" is required (declared int) but missing`},
		{name: "undeclared output",
			src: "def main(ctx):\n    return {'ok': True, 'extra': 1}\n", sidecar: "outputs:\n  ok: {type: bool}\n",
			err: `host.starlark.run: s.star: output "extra" was returned but is not declared in the sidecar (declare it or drop it)`},
		{name: "unknown probe",
			src: "def main(ctx):\n    return ctx.probe('rm.rf')\n", sidecar: anyOut,
			err: `host.starlark.run: s.star: s.star:2:21: ctx.probe: "rm.rf" is not an allow-listed probe (known: gh.issue.list, git.ls_files, git.status)`},
		{name: "probe options refused",
			src: "def main(ctx):\n    return ctx.probe('git.ls_files', ['--others'])\n", sidecar: anyOut,
			err: `host.starlark.run: s.star: s.star:2:21: ctx.probe("git.ls_files"): args[0] "--others" starts with '-'; probe arguments are values, never options`},
		{name: "HTTP off without a cassette",
			src: "def main(ctx):\n    return {'r': ctx.http.get('http://127.0.0.1:1/x').status}\n", sidecar: anyOut,
			err: "host.starlark.run: s.star: s.star:2:30: ctx.http.get: GET http://127.0.0.1:1/x: HTTP is off: a script reaches the network only through an HTTP cassette " +
				"(kitsoki run --http-cassette FILE, recorded with --record; starlark_http_cassette: in a flow)"},
	}
	h := New(f.st, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.script("s", tt.src, tt.sidecar)
			data, errText := outcome(t, h, call(s, tt.inputs, tt.world))
			if tt.err != "" {
				if !strings.HasPrefix(errText, tt.err) {
					t.Fatalf("error = %q\nwant prefix %q", errText, tt.err)
				}
				return
			}
			if errText != "" {
				t.Fatalf("unexpected error: %s", errText)
			}
			if d := cmp.Diff(tt.want, data); d != "" {
				t.Errorf("data (-want +got):\n%s", d)
			}
		})
	}
}

func TestInvokeWithArgs(t *testing.T) {
	f := newFixture(t)
	s := f.script("s", "def main(ctx):\n    return {}\n", "")
	h := New(f.st, Options{})
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"script": s, "timeout": "5s"}, "host.starlark.run: s.star: with.timeout is not a key of host.starlark.run (it takes script and inputs)"},
		{map[string]any{}, "host.starlark.run: with.script must name a .star file, got <nil>"},
		{map[string]any{"script": s, "inputs": "x"}, "host.starlark.run: s.star: with.inputs must be a mapping of input names to values, got string"},
		{map[string]any{"script": "../../etc/x.star"}, `host.starlark.run: ../../etc/x.star: "../../etc/x.star" is outside the workspace ` + f.ws + " (widen the workspace with --workspace DIR)"},
	} {
		_, got := outcome(t, h, &host.Call{Namespace: Name, Args: tt.args})
		if got != tt.want {
			t.Errorf("args %v: error = %q\nwant %q", tt.args, got, tt.want)
		}
	}
	// A script that vanished after load is an infrastructure failure.
	if _, err := h.Invoke(context.Background(), call("gone.star", nil, nil)); err == nil || !strings.Contains(err.Error(), "script gone.star") {
		t.Errorf("vanished script: err = %v", err)
	}
}

func TestLimits(t *testing.T) {
	f := newFixture(t)
	spin := f.script("spin", "def main(ctx):\n    n = 0\n    for i in range(100000000):\n        n += 1\n    return {'n': n}\n", "")
	_, got := outcome(t, New(f.st, Options{MaxSteps: 5000}), call(spin, nil, nil))
	if want := "host.starlark.run: spin.star: exceeded the step limit of 5000 steps (an endless or very long loop?)"; got != want {
		t.Errorf("steps: %q, want %q", got, want)
	}
	// Each iteration keeps another MiB alive; the heap bound stops it long
	// before the step limit would.
	grow := f.script("grow", "def main(ctx):\n    s = 'x' * (1 << 20)\n    keep = []\n    for i in range(100000):\n        keep.append(s + str(i))\n    return {'n': len(keep)}\n", "")
	_, got = outcome(t, New(f.st, Options{MaxMemory: 16 << 20}), call(grow, nil, nil))
	if want := "host.starlark.run: grow.star: grow.star:5:23: exceeded the memory limit of 16 MiB a call: string + string would need 1.0 MiB more, with the heap already "; !strings.HasPrefix(got, want) {
		t.Errorf("memory: %q, want it to start %q", got, want)
	}
}

func TestCancel(t *testing.T) {
	f := newFixture(t)
	spin := f.script("spin", "def main(ctx):\n    for i in range(1000000000):\n        pass\n    return {}\n", "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(f.st, Options{}).Invoke(ctx, call(spin, nil, nil))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// fakeHTTP answers every request with one response and keeps the requests.
type fakeHTTP struct {
	reqs []HTTPRequest
	resp HTTPResponse
}

func (f *fakeHTTP) Do(_ context.Context, r *HTTPRequest) (*HTTPResponse, error) {
	f.reqs = append(f.reqs, *r)
	resp := f.resp
	return &resp, nil
}

func TestHTTP(t *testing.T) {
	f := newFixture(t)
	s := f.script("s", `def main(ctx):
    r = ctx.http.post("https://api.test/w", body = {"id": 42, "tags": ["a"]}, headers = {"X-Key": "k"})
    g = ctx.http.get("https://api.test/raw")
    return {"status": r.status, "ok": bool(r), "name": r.json()["name"], "ct": r.headers["Content-Type"], "text": g.text()}
`, "")
	fh := &fakeHTTP{resp: HTTPResponse{Status: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"name":"sprocket"}`}}
	data, errText := outcome(t, New(f.st, Options{HTTP: fh}), call(s, nil, nil))
	if errText != "" {
		t.Fatal(errText)
	}
	want := map[string]any{"status": int64(201), "ok": true, "name": "sprocket", "ct": "application/json", "text": `{"name":"sprocket"}`,
		"__http_exchanges": []any{
			map[string]any{"method": "POST", "url": "https://api.test/w", "status": int64(201)},
			map[string]any{"method": "GET", "url": "https://api.test/raw", "status": int64(201)},
		}}
	if d := cmp.Diff(want, data); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
	wantReqs := []HTTPRequest{
		{Method: "POST", URL: "https://api.test/w", Headers: map[string]string{"X-Key": "k", "Content-Type": "application/json"}, Body: `{"id":42,"tags":["a"]}`},
		{Method: "GET", URL: "https://api.test/raw"},
	}
	if d := cmp.Diff(wantReqs, fh.reqs); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	// A non-2xx status is falsy, not an error; a non-JSON body's json() is.
	fh.resp = HTTPResponse{Status: 404, Body: "not found"}
	s2 := f.script("s2", "def main(ctx):\n    r = ctx.http.get('https://api.test/x')\n    if not r:\n        return {'s': r.status}\n    return {}\n", "")
	if data, e := outcome(t, New(f.st, Options{HTTP: fh}), call(s2, nil, nil)); e != "" || data["s"] != int64(404) {
		t.Errorf("404: %v %q", data, e)
	}
	s3 := f.script("s3", "def main(ctx):\n    return {'j': ctx.http.get('https://api.test/x').json()}\n", "")
	if _, e := outcome(t, New(f.st, Options{HTTP: fh}), call(s3, nil, nil)); !strings.Contains(e, "response.json(): the body is not JSON") {
		t.Errorf("json(): %q", e)
	}
}

// ctx.probe runs an allow-listed git command in the workspace root; a
// non-zero exit is returned, not raised.
func TestProbe(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t)
	// git must not find a repository above the workspace.
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(f.ws))
	s := f.script("p", "def main(ctx):\n    r = ctx.probe('git.ls_files', ['data'])\n    return {'exit': r['exit'], 'out': r['out']}\n", "")
	h := New(f.st, Options{})
	// Not a repository yet: git fails, the script sees the exit.
	data, e := outcome(t, h, call(s, nil, nil))
	if e != "" || data["exit"] == int64(0) {
		t.Fatalf("outside a repository: %v %q, want a non-zero exit", data, e)
	}
	f.write("data/a.txt", "a")
	for _, args := range [][]string{{"init", "-q"}, {"add", "data/a.txt"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = f.ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	data, e = outcome(t, h, call(s, nil, nil))
	if d := cmp.Diff(map[string]any{"exit": int64(0), "out": "data/a.txt\n"}, data); e != "" || d != "" {
		t.Errorf("ls-files: %q (-want +got):\n%s", e, d)
	}
}
