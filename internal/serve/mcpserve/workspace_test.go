package mcpserve

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// validate_story_kitsoki loads stories confined to the server's workspace:
// the served directory, or the Workspace it is configured with.
func TestValidateStoryStaysInTheWorkspace(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"srv/a/app.yaml":        "app: {id: a}\nroot: s\nstates:\n  s: {}\ninclude: [../../outside/secret.yaml]\n",
		"srv/b/app.yaml":        "app: {id: b}\nroot: s\nstates:\n  s: {}\ninclude: [../shared/rooms.yaml]\n",
		"srv/shared/rooms.yaml": "states:\n  room: {}\n",
		"outside/secret.yaml":   "TOPSECRET\n",
		"srv/c/app.yaml":        "app: {id: c}\nroot: s\nstates:\n  s: {}\ninclude: [../../extra/rooms.yaml]\n",
		"extra/rooms.yaml":      "states:\n  room: {}\n",
	})
	srv := filepath.Join(tmp, "srv")
	loader := func(_ context.Context, path, ws string) (*story.Story, error) {
		return story.Load(path, story.WithWorkspace(ws))
	}
	h := listen(t)
	tests := []struct {
		name, workspace, path string
		ok                    bool
		errors                []any
	}{
		{"include outside the served directory", "", "a", false, []any{
			`app.yaml:5:11: include[0]: "../../outside/secret.yaml" is outside the workspace ` + srv + ` (widen the workspace with --workspace DIR)`}},
		{"sibling inside the served directory", "", "b", true, []any{}},
		{"outside the served directory, without a configured workspace", "", "c", false, []any{
			`app.yaml:5:11: include[0]: "../../extra/rooms.yaml" is outside the workspace ` + srv + ` (widen the workspace with --workspace DIR)`}},
		{"a configured workspace widens it", tmp, "c", true, []any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, h, Config{Profile: mustProfile(t, configuration), Root: srv, Workspace: tt.workspace, LoadStory: loader})
			tc := connect(t, s.URL(), s.Token(), modern)
			text, sc, isErr := tc.mustCall(t, ToolValidateStory, map[string]any{"path": tt.path})
			if isErr {
				t.Fatal(text)
			}
			if strings.Contains(text, "TOPSECRET") {
				t.Errorf("the tool result quotes a file outside the workspace: %s", text)
			}
			if sc["ok"] != tt.ok {
				t.Errorf("ok = %v, want %v (%s)", sc["ok"], tt.ok, text)
			}
			if diff := cmp.Diff(tt.errors, sc["errors"]); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
