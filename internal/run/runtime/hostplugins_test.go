package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// A live run answers a story's host_plugins: (the plugin starts on the
// first call); a run without live agents (flows, replays) leaves them to
// stubs and cassettes, so nothing can start a process there.
func TestOpenRegistersHostPluginsInLiveRuns(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	src := `app: {id: hp}
host_plugins:
  host.tickets: {plugin: subprocess, command: ./missing-plugin}
root: s
states:
  s:
    on_enter:
      - invoke: host.tickets.create
`
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(app, story.WithWorkspace(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, live := range []bool{true, false} {
		rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: live}})
		if err != nil {
			t.Fatal(err)
		}
		_, ok := rt.Host().Handler("host.tickets.create")
		if ok != live {
			t.Errorf("live=%v: host.tickets.create has a handler: %v", live, ok)
		}
		if live {
			res, err := rt.Host().Dispatch(context.Background(), &host.Call{Namespace: "host.tickets.create"})
			want := `host plugin host.tickets: plugin_crash: spawn "` + filepath.Join(dir, "missing-plugin") + `": `
			if err != nil || res.Err == nil || len(res.Err.Error()) < len(want) || res.Err.Error()[:len(want)] != want {
				t.Errorf("dispatch: %v, %+v; want an error starting %s", err, res, want)
			}
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
