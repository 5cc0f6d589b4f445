package wsmanager

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

func TestGet(t *testing.T) {
	cli, _ := filepath.Abs("testdata/wm")
	h := host.New(&story.Story{}, nil, nil)
	Register(h, Config{Getenv: func(k string) string { return map[string]string{EnvCommand: cli}[k] }})
	call := func(id string) *host.Result {
		r, err := h.Dispatch(context.Background(), &host.Call{Namespace: Name, Args: map[string]any{"workspace_id": id}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := call("ws-1")
	if r.Err != nil || r.Data["root_path"] != "/src/ws-1" || r.Data["n"] != int64(3) || len(r.Data["repos"].([]any)) != 1 {
		t.Errorf("get = %v %v", r.Data, r.Err)
	}
	for id, want := range map[string]string{
		"bad":  "host.workspace_manager.get: the workspace's repos must be a list, got string",
		"nope": "host.workspace_manager.get: " + cli + " get nope: unknown workspace nope",
		"-rf":  `with.workspace_id "-rf" starts with '-'`,
		"":     "with.workspace_id is required",
	} {
		if r := call(id); r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("%q: %v, want %q", id, r.Err, want)
		}
	}
	h2 := host.New(&story.Story{}, nil, nil)
	Register(h2, Config{Getenv: func(string) string { return "" }})
	t.Setenv("PATH", t.TempDir())
	r, _ = h2.Dispatch(context.Background(), &host.Call{Namespace: Name, Args: map[string]any{"workspace_id": "x"}})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "workspace-manager is not installed (not found in $PATH): install the workspace manager, or name its command in $KITSOKI_WORKSPACE_MANAGER") {
		t.Errorf("missing CLI: %v", r.Err)
	}
}
