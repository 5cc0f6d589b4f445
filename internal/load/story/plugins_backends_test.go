package story

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

func TestBackendKeysAreRead(t *testing.T) {
	st, err := Load("testdata/backends/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	no, zero := false, 0
	got := st.Plugins["agent.gpt"]
	want := agent.Declaration{Alias: "agent.gpt", Plugin: agent.PluginOpenAI, Tool: "ask", Enabled: true, Dir: got.Dir,
		BaseURL: "http://127.0.0.1:8000/v1", API: "responses", Model: "gpt-5-mini", APIKeyEnv: "MY_KEY", Stream: &no,
		MaxTokens: 2000, MaxTurns: 12, Timeout: 90 * time.Second, Retries: &zero, Effort: "low",
		Pricing: &agent.Pricing{InputPerMTok: 0.5, OutputPerMTok: 1.5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agent.gpt (-want +got):\n%s", diff)
	}
	if c := st.Plugins["agent.codex"]; c.Sandbox != "workspace-write" || c.Approval != "on-request" {
		t.Errorf("agent.codex: %+v", c)
	}
}
