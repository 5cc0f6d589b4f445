package mcpserve

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

func TestListPluginsShowsExposedToolNames(t *testing.T) {
	h := listen(t)
	root, _ := filepath.Abs("../../load/story/testdata/agenttools")
	s := open(t, h, Config{Profile: mustProfile(t, configuration), Root: root,
		LoadStory: func(_ context.Context, path, ws string) (*story.Story, error) {
			return story.Load(path, story.WithWorkspace(ws))
		}})
	tc := connect(t, s.URL(), s.Token(), modern)
	text, sc, isErr := tc.mustCall(t, ToolListPlugins, map[string]any{"path": "."})
	if isErr {
		t.Fatal(text)
	}
	got := map[string]any{}
	for _, p := range sc["plugins"].([]any) {
		m := p.(map[string]any)
		got[m["alias"].(string)] = m["agent_tools"]
	}
	want := map[string]any{
		"agent.claude":   nil,
		"agent.tagger":   []any{"kitsoki_agent_tagger_add_tag", "kitsoki_agent_tagger_list_tags"},
		"agent.packaged": []any{"kitsoki_agent_packaged_summarize"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agent_tools by plugin (-want +got):\n%s", diff)
	}
}
