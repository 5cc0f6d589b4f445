package runtime_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// TestOpenRegistersBuiltinHandlers: every handler of the catalog that is
// not an agent verb is registered by Open, with or without a session, and
// host.run answers in the story's workspace.
func TestOpenRegistersBuiltinHandlers(t *testing.T) {
	st := loadHello(t)
	for _, cfg := range []runtime.Config{{}, {Session: &runtime.Session{ID: "s"}}} {
		rt, err := runtime.Open(st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := rt.Host()
		for _, s := range catalog.Builtins() {
			if s.Name == host.SearchNamespace {
				continue // registered with a ranker (live runs)
			}
			if _, ok := h.Handler(s.Name); !ok {
				t.Errorf("session %v: %s is in the catalog but not registered", cfg.Session != nil, s.Name)
			}
		}
		res, err := h.Dispatch(context.Background(), &host.Call{Namespace: "host.run", Args: map[string]any{"cmd": "pwd", "args": []any{}}})
		if err != nil || res.Err != nil {
			t.Fatal(err, res.Err)
		}
		if got, want := res.Data["stdout"], st.Workspace.Dir()+"\n"; got != want {
			t.Errorf("host.run ran in %q, want the workspace %q", got, want)
		}
		rt.Close()
	}
}

// TestOpenRoutesInterfacesToTheirDefault: iface.<name>.<op> of a declared
// host interface is answered by <default>.<op> (here the real
// host.run), and an interface without a default by nothing.
func TestOpenRoutesInterfacesToTheirDefault(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	body := "app: {id: ifaces}\nhost_interfaces:\n  shell: {default: host.run}\n  vcs: {operations: {push: {}}}\nroot: a\nstates:\n  a: {}\n"
	if err := os.WriteFile(app, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := runtime.Open(st, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Host().Dispatch(context.Background(), &host.Call{Namespace: "iface.shell.exec", Args: map[string]any{"cmd": "printf", "args": []any{"routed"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || res.Data["stdout"] != "routed" {
		t.Errorf("iface.shell.exec = %v, %v; want host.run's output", res.Data, res.Err)
	}
	_, err = rt.Host().Dispatch(context.Background(), &host.Call{Namespace: "iface.vcs.push"})
	if err == nil || !strings.HasPrefix(err.Error(), `no handler for invoke "iface.vcs.push"`) {
		t.Errorf("iface.vcs.push (no default): err = %v, want no handler", err)
	}
}

// TestOpenWiresOut: host.transport.post prints on Config.Out, and nothing
// without one.
func TestOpenWiresOut(t *testing.T) {
	st := loadHello(t)
	var out bytes.Buffer
	for _, w := range []io.Writer{&out, nil} {
		rt, err := runtime.Open(st, runtime.Config{Out: w})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Host().Dispatch(context.Background(), &host.Call{Namespace: "host.transport.post", Args: map[string]any{"body": "hello"}})
		rt.Close()
		if err != nil || res.Err != nil {
			t.Fatal(err, res.Err)
		}
	}
	if got := out.String(); got != "[kitsoki]\nhello\n" {
		t.Errorf("Out got %q, want one message", got)
	}
}
