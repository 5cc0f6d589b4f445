package profiles

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/project"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const config = `profiles:
  fast: {backend: anthropic, model: claude-haiku-4-5, models: [claude-haiku-4-5, claude-sonnet-4-5], efforts: [low, high]}
  gpt: {backend: openai, model: gpt-5-mini, quota: {max_cost_usd: 1}}
  synthetic: {backend: claude, model: syn:large:text, env: {ANTHROPIC_BASE_URL: "https://api.synthetic.new", ANTHROPIC_AUTH_TOKEN: "${SYN_KEY}"}}
  broken: {backend: codex, env: {KEY: "${NOT_SET_ANYWHERE}"}}
default_profile: gpt
story_profiles: {hello: fast}
agent_profiles: {reviewer: synthetic}
`

func cfg(t *testing.T, text string) *project.Config {
	t.Helper()
	c, err := project.Parse([]byte(text), ".kitsoki.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func storyOf(id string) *story.Story {
	return &story.Story{App: story.App{ID: id}, Dir: "/stories/" + id,
		Plugins: map[string]agent.Declaration{"agent.claude": {Plugin: agent.PluginClaudeCLI}, "agent.demo": {Plugin: agent.PluginInProcess}}}
}

func lookup(k string) (string, bool) {
	if k == "SYN_KEY" {
		return "syn_secret_42", true
	}
	return "", false
}

func plan(t *testing.T, st *story.Story, req Request) *Plan {
	t.Helper()
	req.LookupEnv = lookup
	p, err := New(cfg(t, config), st, req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartingChoice(t *testing.T) {
	cases := []struct {
		name     string
		st       *story.Story
		req      Request
		want     host.Choice
		explicit bool
	}{
		{"story_profiles by app id", storyOf("hello"), Request{}, host.Choice{Profile: "fast", Alias: "profile.fast", Where: ".kitsoki.yaml profiles.fast"}, false},
		{"default_profile", storyOf("other"), Request{}, host.Choice{Profile: "gpt", Alias: "profile.gpt", Quota: &agent.Quota{MaxCostUSD: 1}, Where: ".kitsoki.yaml profiles.gpt"}, false},
		{"--profile wins", storyOf("hello"), Request{Profile: "gpt"}, host.Choice{Profile: "gpt", Alias: "profile.gpt", Quota: &agent.Quota{MaxCostUSD: 1}, Where: ".kitsoki.yaml profiles.gpt"}, true},
		{"--agent: the story's alias", storyOf("hello"), Request{Agent: "demo"}, host.Choice{Profile: "demo", Alias: "agent.demo"}, true},
		{"--agent: a backend on its defaults", storyOf("hello"), Request{Agent: "codex"}, host.Choice{Profile: "codex", Alias: "profile.codex"}, true},
		{"--agent claude: the story's claude agent", storyOf("hello"), Request{Agent: "claude"}, host.Choice{Profile: "claude"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, tc.st, tc.req)
			if diff := cmp.Diff(tc.want, p.Selection.Current()); diff != "" {
				t.Errorf("choice (-want +got):\n%s", diff)
			}
			// An explicit choice applies to every builtin agent's calls.
			if _, ok := p.Selection.For("", false); ok != tc.explicit {
				t.Errorf("explicit = %v, want %v", ok, tc.explicit)
			}
		})
	}
	p := plan(t, storyOf("hello"), Request{Agent: "codex"})
	if d := p.Decls["profile.codex"]; d.Plugin != agent.PluginCodexCLI || d.Source != "--agent codex" {
		t.Errorf("--agent codex declares %+v", d)
	}
}

func TestAClaudeProfileKeepsTheClaudeAgent(t *testing.T) {
	p := plan(t, storyOf("x"), Request{})
	c, ok := p.Selection.For("reviewer", true)
	if !ok || c.Alias != "" || c.Model != "syn:large:text" || c.Provider == nil ||
		c.Provider.Env["ANTHROPIC_AUTH_TOKEN"] != "syn_secret_42" || !strings.Contains(strings.Join(p.Secrets, ","), "syn_secret_42") {
		t.Errorf("reviewer's choice %+v, secrets %v", c, p.Secrets)
	}
	st := storyOf("x")
	p.Apply(st)
	if _, ok := st.Plugins["profile.gpt"]; !ok || !strings.Contains(strings.Join(st.Secrets, ","), "syn_secret_42") {
		t.Errorf("Apply: plugins %v, secrets %v", st.Plugins, st.Secrets)
	}
}

func TestErrors(t *testing.T) {
	st := storyOf("x")
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Profile: "nope"}, `--profile nope: profile "nope" is not declared in .kitsoki.yaml (declared: broken, fast, gpt, synthetic)`},
		{Request{Profile: "broken"}, "--profile broken: .kitsoki.yaml:5:33: profiles.broken.env: env var NOT_SET_ANYWHERE is not set (export it, or choose another profile)"},
		{Request{Profile: "fast", Agent: "codex"}, "--profile and --agent both choose the default agent: give one"},
		{Request{Agent: "gemini"}, "--agent gemini: not an agent_plugins alias of the story (agent.claude, agent.demo) nor a backend (anthropic, claude, codex, copilot, local_llm, openai)"},
	} {
		tc.req.LookupEnv = lookup
		if _, err := New(cfg(t, config), st, tc.req); err == nil || err.Error() != tc.want {
			t.Errorf("%+v:\n got %v\nwant %s", tc.req, err, tc.want)
		}
	}
}

func TestSwitch(t *testing.T) {
	p := plan(t, storyOf("hello"), Request{})
	steps := []struct {
		what, arg string
		want      trace.AgentSwitched
		describe  string
	}{
		{SwitchModel, "2", trace.AgentSwitched{Command: ":model 2", Switch: "model", Profile: "fast", Model: "claude-sonnet-4-5", PreviousProfile: "fast", PreviousModel: "claude-haiku-4-5"},
			"profile fast (model claude-sonnet-4-5)"},
		{SwitchEffort, "high", trace.AgentSwitched{Command: ":effort high", Switch: "effort", Profile: "fast", Model: "claude-sonnet-4-5", Effort: "high",
			PreviousProfile: "fast", PreviousModel: "claude-sonnet-4-5"}, "profile fast (model claude-sonnet-4-5, effort high)"},
		{SwitchProvider, "gpt", trace.AgentSwitched{Command: ":provider gpt", Switch: "provider", Profile: "gpt", Model: "gpt-5-mini",
			PreviousProfile: "fast", PreviousModel: "claude-sonnet-4-5", PreviousEffort: "high"}, "profile gpt (model gpt-5-mini)"},
		{SwitchModel, "gpt-5", trace.AgentSwitched{Command: ":model gpt-5", Switch: "model", Profile: "gpt", Model: "gpt-5", PreviousProfile: "gpt", PreviousModel: "gpt-5-mini"}, "profile gpt (model gpt-5)"},
		{SwitchProvider, "none", trace.AgentSwitched{Command: ":provider none", Switch: "provider", PreviousProfile: "gpt", PreviousModel: "gpt-5"}, "the story's own agents"},
	}
	for _, s := range steps {
		got, err := p.Switch(s.what, s.arg)
		if err != nil {
			t.Fatalf(":%s %s: %v", s.what, s.arg, err)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf(":%s %s (-want +got):\n%s", s.what, s.arg, diff)
		}
		if d := p.Describe(); d != s.describe {
			t.Errorf(":%s %s: %s, want %s", s.what, s.arg, d, s.describe)
		}
	}
	// After :provider none the story's own agents answer every call, the
	// persona's profile included.
	if _, ok := p.Selection.For("reviewer", true); ok {
		t.Error("a switch to none still routes the persona")
	}
	p = plan(t, storyOf("hello"), Request{})
	for _, bad := range []struct{ what, arg, want string }{
		{SwitchModel, "9", ":model 9: the profile lists 2 models (1 claude-haiku-4-5, 2 claude-sonnet-4-5, or any model name)"},
		{SwitchEffort, "max", ":effort max: profile fast offers low, high"},
		{SwitchProvider, "nope", `profile "nope" is not declared in .kitsoki.yaml (declared: broken, fast, gpt, synthetic)`},
		{SwitchProvider, "broken", ".kitsoki.yaml:5:33: profiles.broken.env: env var NOT_SET_ANYWHERE is not set (export it, or choose another profile)"},
		{SwitchModel, "", ":model needs a value (1 claude-haiku-4-5, 2 claude-sonnet-4-5, or any model name)"},
	} {
		if _, err := p.Switch(bad.what, bad.arg); err == nil || err.Error() != bad.want {
			t.Errorf(":%s %s:\n got %v\nwant %s", bad.what, bad.arg, err, bad.want)
		}
	}
	if got := p.Options(SwitchProvider); got != "broken, fast, gpt, synthetic, none" {
		t.Errorf("provider options %s", got)
	}
}
