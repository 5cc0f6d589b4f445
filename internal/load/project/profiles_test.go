package project

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

const shared = `harness_profiles:
  claude-native: {backend: claude, model: opus, models: [opus, sonnet, haiku], effort: medium}
  synthetic-codex:
    backend: codex
    model: syn:large:text
    env: {SYNTHETIC_KEY: "${SYNTHETIC_API_KEY}"}
profiles:
  fast:
    backend: anthropic
    model: claude-haiku-4-5
    api_key_env: MY_ANTHROPIC_KEY
    quota: {max_cost_usd: 2.5, max_calls: 40}
    pricing: {input_per_mtok: 1, output_per_mtok: 5}
default_profile: claude-native
story_profiles: {hello: fast}
agent_profiles: {reviewer: synthetic-codex}
`

func TestProfilesSharedAndLocal(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, File, shared)
	// The local file changes one key of a shared profile, adds one, and
	// moves the default: Kitsoki's deep merge, local wins.
	write(t, dir, LocalFile, "harness_profiles:\n  synthetic-codex: {model: syn:small:text}\nprofiles:\n  gpt: {backend: openai, model: gpt-5-mini, api: responses}\ndefault_profile: gpt\n")
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sortedKeys(cfg.Profiles), ","); got != "claude-native,fast,gpt,synthetic-codex" {
		t.Errorf("profiles %s", got)
	}
	sc := cfg.Profiles["synthetic-codex"]
	if sc.Model != "syn:small:text" || sc.Backend != "codex" || sc.Env["SYNTHETIC_KEY"] != "${SYNTHETIC_API_KEY}" {
		t.Errorf("merged profile %+v", sc)
	}
	if cfg.DefaultProfile != "gpt" || cfg.StoryProfiles["hello"] != "fast" || cfg.AgentProfiles["reviewer"] != "synthetic-codex" {
		t.Errorf("choices %q %v %v", cfg.DefaultProfile, cfg.StoryProfiles, cfg.AgentProfiles)
	}
	if cn := cfg.Profiles["claude-native"]; cn.Block != "harness_profiles" || strings.Join(cn.Models, ",") != "opus,sonnet,haiku" || cn.Effort != "medium" {
		t.Errorf("claude-native %+v", cn)
	}
}

func TestResolve(t *testing.T) {
	cfg, err := Parse([]byte(shared), filepath.Join("p", File))
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"SYNTHETIC_API_KEY": "syn_secret_123"}[k]
		return v, ok
	}
	r, err := cfg.Profiles["synthetic-codex"].Resolve("/story", lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Declaration{Alias: "profile.synthetic-codex", Plugin: agent.PluginCodexCLI, Model: "syn:large:text", Tool: "ask",
		Env: map[string]string{"SYNTHETIC_KEY": "syn_secret_123"}, Enabled: true, Dir: "/story", Source: ".kitsoki.yaml harness_profiles.synthetic-codex"}
	if diff := cmp.Diff(want, r.Decl); diff != "" || len(r.Secrets) != 1 || r.Secrets[0] != "syn_secret_123" {
		t.Errorf("declaration (-want +got):\n%s\nsecrets %v", diff, r.Secrets)
	}
	fast, _ := cfg.Profiles["fast"].Resolve("/story", lookup)
	if d := fast.Decl; d.Plugin != agent.PluginAnthropic || *d.Quota != (agent.Quota{MaxCostUSD: 2.5, MaxCalls: 40}) || d.Pricing.OutputPerMTok != 5 || d.APIKeyEnv != "MY_ANTHROPIC_KEY" {
		t.Errorf("fast %+v", d)
	}
	_, err = cfg.Profiles["synthetic-codex"].Resolve("/story", func(string) (string, bool) { return "", false })
	if err == nil || err.Error() != "p/.kitsoki.yaml:6:10: harness_profiles.synthetic-codex.env: env var SYNTHETIC_API_KEY is not set (export it, or choose another profile)" {
		t.Errorf("unset variable: %v", err)
	}
}

func TestProfileErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, File, `profiles:
  a: {backend: gemini}
  b: {model: x}
  c: {backend: openai, modle: gpt-5, models_endpoint: "https://x/models", quota: {max_calls: 1.5}}
harness_profiles:
  a: {backend: claude}
default_profile: nope
story_profiles: {hello: missing}
`)
	_, err := Load(dir)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`c.modle: unknown key "modle" (did you mean "model"?)`,
		`profiles.c.models_endpoint: models_endpoint: kitsoki does not fetch a provider's model list; name the models :model offers under models:`,
		`profiles.c.quota.max_calls: profiles.c.quota.max_calls must be a whole number, 0 or more`,
		`harness_profiles.a: profile "a" is declared twice (once under profiles:, once under harness_profiles:); keep one`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	write(t, dir, File, "profiles:\n  a: {backend: gemini}\n  b: {model: x}\ndefault_profile: nope\nstory_profiles: {hello: missing}\n")
	_, err = Load(dir)
	for _, want := range []string{
		`.kitsoki.yaml:2:16: profiles.a.backend: unknown backend "gemini" (known: anthropic, claude, codex, copilot, local_llm, openai)`,
		`profiles.b: the profile names no backend: (one of anthropic, claude, codex, copilot, local_llm, openai)`,
		`.kitsoki.yaml:4:18: default_profile: profile "nope" is not declared (declared: a, b)`,
		`story_profiles.hello: profile "missing" is not declared (declared: a, b)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// TestProfileKeysOfAnotherBackend: a key the profile's backend does not
// take would be ignored, so it is refused at its position, and a sandbox,
// approval or api mode the backend does not know is refused with the
// ones it does, as in a story's agent_plugins:.
func TestProfileKeysOfAnotherBackend(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"profiles:\n  cp: {backend: copilot, sandbox: read-only}\n",
			`.kitsoki.yaml:2:35: profiles.cp.sandbox: sandbox "read-only": backend copilot takes on, off`},
		{"profiles:\n  cx: {backend: codex, approval: maybe}\n",
			`.kitsoki.yaml:2:34: profiles.cx.approval: approval "maybe": backend codex takes untrusted, on-failure, on-request, never`},
		{"profiles:\n  gpt: {backend: openai, api: completions}\n",
			`.kitsoki.yaml:2:31: profiles.gpt.api: api "completions": backend openai takes chat, responses`},
		{"profiles:\n  gpt: {backend: openai, sandbox: read-only}\n",
			`.kitsoki.yaml:2:35: profiles.gpt.sandbox: sandbox: does not apply to backend openai (builtin.openai); it is a key of builtin.codex_cli, builtin.copilot_cli; remove it`},
		{"profiles:\n  cl: {backend: claude, command: /opt/claude}\n",
			`.kitsoki.yaml:2:34: profiles.cl.command: command: does not apply to backend claude (builtin.claude_cli); it is a key of builtin.codex_cli, builtin.copilot_cli; remove it`},
		{"profiles:\n  an: {backend: anthropic, endpoint: http://127.0.0.1:8080}\n",
			`.kitsoki.yaml:2:38: profiles.an.endpoint: endpoint: does not apply to backend anthropic (builtin.anthropic); it is a key of builtin.local_llm; remove it`},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		write(t, dir, File, tc.yaml)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error\n%v\nwant it to contain\n%s", tc.yaml, err, tc.want)
		}
	}
	dir := t.TempDir()
	write(t, dir, File, "profiles:\n  cx: {backend: codex, sandbox: workspace-write, approval: on-request, command: codex, args: [--strict-config]}\n"+
		"  cl: {backend: claude, model: opus, effort: high, env: {A: b}}\n  lo: {backend: local_llm, endpoint: http://127.0.0.1:8080, api_key_env: K}\n")
	if _, err := Load(dir); err != nil {
		t.Errorf("keys their backends take: %v", err)
	}
}
