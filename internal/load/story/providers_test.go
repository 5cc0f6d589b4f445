package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

func TestProviders(t *testing.T) {
	s := load(t, "testdata/providers/app.yaml", map[string]string{"GLM_KEY": "sk-glm-secret"})
	want := map[string]agent.Provider{
		"glm": {Name: "glm", Model: "glm-4.6", Secrets: []string{"sk-glm-secret"},
			Env: map[string]string{"ANTHROPIC_BASE_URL": "https://glm.example/anthropic", "ANTHROPIC_AUTH_TOKEN": "sk-glm-secret"}},
		"local": {Name: "local", Model: "qwen3-coder", Effort: "low"},
	}
	if diff := cmp.Diff(want, s.Providers); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	if !cmp.Equal(s.Secrets, []string{"sk-glm-secret"}) {
		t.Errorf("secrets = %v", s.Secrets)
	}
}

func TestProviderErrors(t *testing.T) {
	got := loadErr(t, "testdata/providers_bad/app.yaml", nil)
	want := []string{
		"app.yaml:3:3: providers.empty: empty provider: give it model: and/or env:",
		`app.yaml:4:20: providers.typo.enviro: unknown key "enviro"`,
		"app.yaml:6:33: providers.unset: env var NOT_SET referenced in env.ANTHROPIC_AUTH_TOKEN not set",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
