package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/project"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/testsupport/agentcli"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeanthropic"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
)

// helloCopy copies the demo story (app.yaml, prompts, schemas, evals) to
// a fresh directory, writes .kitsoki.yaml there and makes it the working
// directory, where kitsoki reads its project config.
func helloCopy(t *testing.T, kitsokiYAML string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"app.yaml", "prompts/greet.md", "schemas/greeting.json", "evals/compose.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../stories/hello", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if kitsokiYAML != "" {
		if err := os.WriteFile(filepath.Join(dir, ".kitsoki.yaml"), []byte(kitsokiYAML), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}

// greeter answers the demo story's decide as a model would: the register
// the prompt asks for.
func greeter(body map[string]any) fakeopenai.Reply {
	_, sub := greeting(body)
	return fakeopenai.Reply{Text: string(sub), In: 2000, Out: 40}
}

const testKey = "sk-test-kitsoki-0123456789abcdef"

func profileYAML(f *fakeopenai.Server) string {
	return "profiles:\n  fast:\n    backend: openai\n    base_url: " + f.Base() + "\n    model: gpt-4.1-mini\n    api_key_env: KITSOKI_TEST_OPENAI_KEY\n"
}

func events(t *testing.T, path, kind string) []trace.Event {
	t.Helper()
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []trace.Event
	for _, ev := range evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func TestRunProfileOnTheDemoStory(t *testing.T) {
	f := fakeopenai.NewFunc(t, greeter)
	helloCopy(t, profileYAML(f))
	t.Setenv("KITSOKI_TEST_OPENAI_KEY", testKey)
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", "app.yaml", "--profile", "fast", "--trace", tr, "--intents", "greet name=Ada style=formal,bye")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "Good day. It is a pleasure.") || !strings.Contains(out, "Ada was greeted (formal).") {
		t.Errorf("stdout:\n%s", out)
	}
	starts := events(t, tr, trace.KindAgentCallStart)
	var st trace.AgentCallStart
	if len(starts) != 1 || trace.Decode(&starts[0], &st) != nil || st.Profile != "fast" || st.Model != "gpt-4.1-mini" || st.Agent != "greeter" {
		t.Errorf("agent.call.start %+v", st)
	}
	req := f.Request(0)
	if req.Header.Get("Authorization") != "Bearer "+testKey || req.Body["response_format"] == nil {
		t.Errorf("the decide reached the endpoint as OpenAI's wire: %v", req.Body)
	}
	raw, _ := os.ReadFile(tr)
	if strings.Contains(string(raw)+out+errs, testKey) {
		t.Error("the API key is in the trace or the output")
	}
	if !strings.Contains(string(raw), `"input_tokens":2000`) {
		t.Error("the call's usage is not in the trace")
	}
}

func TestMaxCostStopsTheRun(t *testing.T) {
	f := fakeopenai.NewFunc(t, greeter)
	helloCopy(t, profileYAML(f))
	t.Setenv("KITSOKI_TEST_OPENAI_KEY", testKey)
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	// A greeting costs 2000 tokens in at $0.40/MTok and 40 out at
	// $1.60/MTok: $0.000864, over a cap of $0.0005.
	code, out, errs := runCLI(t, "", "run", "app.yaml", "--profile", "fast", "--max-cost", "0.0005", "--trace", tr,
		"--intents", "greet name=Ada,again,greet name=Bob")
	if code != exitAgent {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitAgent, out, errs)
	}
	if want := "kitsoki: cost cap reached: --max-cost is $0.0005 and this run's agent calls have cost $0.0009 (1 call); raise --max-cost to go on"; !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	if f.Count() != 1 {
		t.Errorf("%d requests: the second call must not go out", f.Count())
	}
	if len(events(t, tr, trace.KindCostCapReached)) != 1 {
		t.Error("no kitsoki.cost_cap in the trace")
	}
}

func TestRunBadAgentInput(t *testing.T) {
	f := fakeopenai.NewFunc(t, greeter)
	cases := []struct {
		name, yaml string
		args       []string
		code       int
		want       string
	}{
		// The call fails, its on_error goes back to the lobby, the input
		// ends there (exit 6); the failure is one line on stderr.
		{"missing key", profileYAML(f), []string{"--profile", "fast"}, exitIncomplete,
			"openai API key missing: KITSOKI_TEST_OPENAI_KEY is not set; export KITSOKI_TEST_OPENAI_KEY=<your key>, or name the variable that holds it with api_key_env: under .kitsoki.yaml profiles.fast"},
		{"unknown profile", profileYAML(f), []string{"--profile", "slow"}, exitUsage,
			`--profile slow: profile "slow" is not declared in .kitsoki.yaml (declared: fast)`},
		{"unknown agent", "", []string{"--agent", "gemini"}, exitUsage,
			"--agent gemini: not an agent_plugins alias of the story (agent.claude, agent.demo) nor a backend (anthropic, claude, codex, copilot, local_llm, openai)"},
		{"CLI not on PATH", "profiles:\n  cx: {backend: codex, command: codex-not-installed-here}\n", []string{"--profile", "cx"}, exitIncomplete,
			`codex CLI "codex-not-installed-here" not found (exec: "codex-not-installed-here": executable file not found in $PATH): install it (scripts/setup-agent-clis.sh, or npm install -g @openai/codex) so that codex is on PATH, or set command: <path to codex> under .kitsoki.yaml profiles.cx`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			helloCopy(t, tc.yaml)
			args := append([]string{"run", "app.yaml", "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "greet name=Ada"}, tc.args...)
			code, out, errs := runCLI(t, "", args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d (want %d)\nstderr:\n%s\nwant it to contain:\n%s\nstdout:\n%s", code, tc.code, errs, tc.want, out)
			}
		})
	}
}

func TestEvalLiveWithAProfile(t *testing.T) {
	f := fakeopenai.NewFunc(t, greeter)
	dir := helloCopy(t, profileYAML(f))
	t.Setenv("KITSOKI_TEST_OPENAI_KEY", testKey)
	reports := t.TempDir()
	code, out, errs := runCLI(t, "", "eval", "run", "--live", "--profile", "fast", "--report-dir", reports, filepath.Join(dir, "evals", "compose.yaml"))
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "fast/gpt-4.1-mini") || f.Count() != 15 {
		t.Errorf("%d requests\nstdout:\n%s", f.Count(), out)
	}
	b, err := os.ReadFile(filepath.Join(reports, "latest.json"))
	if err != nil || !strings.Contains(string(b), `"profile": "fast"`) {
		t.Errorf("report: %v\n%.500s", err, b)
	}
}

func TestRunAgentCodexOnTheDemoStory(t *testing.T) {
	bin := agentcli.Find(t, "codex", "KITSOKI_CODEX")
	f := fakeopenai.NewFunc(t, greeter)
	helloCopy(t, "")
	home := t.TempDir()
	cfg := "model_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" + f.Base() + "\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// codex on its defaults reads its own config (CODEX_HOME): here a
	// model provider on the fake endpoint; every other URL is closed.
	t.Setenv("CODEX_HOME", home)
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		t.Setenv(k, "http://127.0.0.1:9")
	}
	t.Setenv("NO_PROXY", "127.0.0.1,localhost")
	t.Setenv("no_proxy", "127.0.0.1,localhost")
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", "app.yaml", "--agent", "codex", "--trace", tr, "--intents", "greet name=Ada style=casual,bye")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "Hey there, nice to see you!") {
		t.Errorf("stdout:\n%s", out)
	}
	var st trace.AgentCallStart
	starts := events(t, tr, trace.KindAgentCallStart)
	if len(starts) != 1 || trace.Decode(&starts[0], &st) != nil || st.Profile != "codex" {
		t.Errorf("agent.call.start %+v", st)
	}
	if f.Request(0).Path != "/v1/responses" {
		t.Errorf("codex asked %s", f.Request(0).Path)
	}
}

// quickEval is a two-example dataset of the demo story's call, each
// example once: what TestEvalLiveOnEachBackend measures.
const quickEval = `kind: agent_eval
app: ../app.yaml
call: compose
agent: greeter
task:
  goal: "Pick the register the visitor asked for."
  boundedness: {max_turns: 1, tool_policy: none, prepared_context: true}
  adherence_bar: {min_pass_rate: 0.95}
matrix:
  profiles: [agent.demo]
  repeat: 1
comparator: {kind: enum, field: tone}
examples:
  - name: ada-casual
    args: {name: Ada, style: casual}
    expect: {text: "Hey Ada!", tone: casual, done: true}
  - name: grace-formal
    args: {name: Grace, style: formal}
    expect: {text: "Good day, Grace.", tone: formal, done: true}
selection: {strategy: cheapest_passing}
`

// greeting is the demo story's answer in the register body asks for.
func greeting(body any) (tone string, sub []byte) {
	b, _ := json.Marshal(body)
	tone, text := "casual", "Hey there, nice to see you!"
	if strings.Contains(string(b), "formal register") {
		tone, text = "formal", "Good day. It is a pleasure."
	}
	sub, _ = json.Marshal(map[string]any{"text": text, "tone": tone, "done": true})
	return tone, sub
}

// anthropicGreeter answers the decide through the submit tool, as
// Claude does when tool_choice forces it.
func anthropicGreeter(body map[string]any) fakeanthropic.Reply {
	_, sub := greeting(body)
	var in map[string]any
	json.Unmarshal(sub, &in)
	return fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 900, 30, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", in))}
}

func TestEvalLiveOnEachBackend(t *testing.T) {
	oa := fakeopenai.NewFunc(t, greeter)
	an := fakeanthropic.NewFunc(t, anthropicGreeter)
	base := func(name, backend, url, extra string) string {
		return "  " + name + ":\n    backend: " + backend + "\n    base_url: " + url + "\n" + extra
	}
	profiles := "profiles:\n" +
		base("chat", "openai", oa.Base(), "    api_key_env: KITSOKI_TEST_OPENAI_KEY\n") +
		base("responses", "openai", oa.Base(), "    api: responses\n    api_key_env: KITSOKI_TEST_OPENAI_KEY\n") +
		base("claude-api", "anthropic", an.URL(), "    api_key_env: KITSOKI_TEST_ANTHROPIC_KEY\n") +
		base("cx", "codex", oa.Base(), "") +
		base("cp", "copilot", oa.Base(), "    model: gpt-4.1-mini\n")
	dir := helloCopy(t, profiles)
	if err := os.WriteFile(filepath.Join(dir, "evals", "quick.yaml"), []byte(quickEval), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KITSOKI_TEST_OPENAI_KEY", testKey)
	t.Setenv("KITSOKI_TEST_ANTHROPIC_KEY", testKey)
	cases := []struct {
		profile string
		cli     string // the CLI the profile needs ("" none)
		homeVar string
	}{{"chat", "", ""}, {"responses", "", ""}, {"claude-api", "", ""}, {"cx", "codex", "CODEX_HOME"}, {"cp", "copilot", "COPILOT_HOME"}}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			if tc.cli != "" {
				bin := agentcli.Find(t, tc.cli, "KITSOKI_"+strings.ToUpper(tc.cli))
				for _, kv := range agentcli.Environ(t, tc.homeVar) {
					k, v, _ := strings.Cut(kv, "=")
					t.Setenv(k, v)
				}
				t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			}
			reports := t.TempDir()
			code, out, errs := runCLI(t, "", "eval", "run", "--live", "--profile", tc.profile, "--report-dir", reports, filepath.Join(dir, "evals", "quick.yaml"))
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			if !strings.Contains(out, "pass") || !strings.Contains(out, "decision: cheapest_passing -> "+tc.profile+"/") {
				t.Errorf("stdout:\n%s", out)
			}
		})
	}
}

func TestHostsAndValidateListTheAgentTypes(t *testing.T) {
	code, out, _ := runCLI(t, "", "hosts")
	for _, typ := range []string{"builtin.anthropic", "builtin.openai", "builtin.codex_cli", "builtin.copilot_cli"} {
		if code != exitOK || !strings.Contains(out, "  "+typ+"  ") {
			t.Errorf("kitsoki hosts does not list %s:\n%s", typ, out)
		}
	}
	helloCopy(t, "profiles:\n  fast: {backend: anthropic, model: claude-haiku-4-5}\n  syn: {backend: claude, env: {T: \"${KITSOKI_UNSET_FOR_TEST}\"}}\n")
	code, out, errs := runCLI(t, "", "validate", "app.yaml")
	want := "app.yaml: ok (4 states, 4 intents, 2 agent plugins)\n  agent.claude  builtin.claude_cli  " + injectedNote + "\n  agent.demo  builtin.inprocess\n" +
		"profiles (.kitsoki.yaml):\n  fast  builtin.anthropic  model claude-haiku-4-5\n" +
		"  syn  not usable: .kitsoki.yaml:3:31: profiles.syn.env: env var KITSOKI_UNSET_FOR_TEST is not set (export it, or choose another profile)\n"
	if code != exitOK || out != want {
		t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errs)
	}
}

// TestLiveSwitchReachesTheNextCall: at the terminal prompt, :model and
// :effort change the model and the reasoning effort of the next agent
// call on the wire, and :provider none gives the story's own agent back;
// every switch is in the trace.
// The prompt is wired as runStory wires it (the plan of --profile fast,
// its selection in the runtime, the switches recording into the trace);
// a test's stdin is no terminal, so the loop is fed from a reader.
func TestLiveSwitchReachesTheNextCall(t *testing.T) {
	f := fakeopenai.NewFunc(t, greeter)
	dir := helloCopy(t, profileYAML(f))
	t.Setenv("KITSOKI_TEST_OPENAI_KEY", testKey)
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := project.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	af := &agentFlags{profile: "fast"}
	plan, budget, err := af.plan(&globals{project: cfg}, st)
	if err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s"},
		Trace: runtime.Trace{Path: tr}, Selection: plan.Selection, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	sw := &switchCommands{plan: plan, record: rt.Record}
	con := &driver.Console{D: localDriver(rt), Out: &out, Err: &errb, Extra: localCommands(nil, sw)}
	if code, stop := con.Begin(context.Background()); stop {
		t.Fatalf("the story stopped on entry: exit %d\n%s", code, errb.String())
	}
	in := "greet name=Ada\nagain\n:model gpt-5-mini\n:effort low\ngreet name=Bob\nagain\n:provider none\ngreet name=Cy\nbye\n"
	code := con.Prompt(context.Background(), driver.NewLines(strings.NewReader(in)))
	rt.Close()
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "agent: profile fast (model gpt-5-mini)\n") || !strings.Contains(out.String(), "agent: profile fast (model gpt-5-mini, effort low)\n") || !strings.Contains(out.String(), "Cy was greeted") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	if f.Count() != 2 {
		t.Fatalf("%d requests to the endpoint, want 2 (the third greeting is the story's own agent)", f.Count())
	}
	if m0, m1 := f.Request(0).Body["model"], f.Request(1).Body["model"]; m0 != "gpt-4.1-mini" || m1 != "gpt-5-mini" {
		t.Errorf("models on the wire: %v then %v", m0, m1)
	}
	if e0, e1 := f.Request(0).Body["reasoning_effort"], f.Request(1).Body["reasoning_effort"]; e0 != nil || e1 != "low" {
		t.Errorf("reasoning_effort on the wire: %v then %v, want none then low", e0, e1)
	}
	var got []trace.AgentSwitched
	for _, ev := range events(t, tr, trace.KindAgentSwitched) {
		var p trace.AgentSwitched
		if err := trace.Decode(&ev, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	want := []trace.AgentSwitched{
		{Command: ":model gpt-5-mini", Switch: "model", Profile: "fast", Model: "gpt-5-mini", PreviousProfile: "fast", PreviousModel: "gpt-4.1-mini"},
		{Command: ":effort low", Switch: "effort", Profile: "fast", Model: "gpt-5-mini", Effort: "low", PreviousProfile: "fast", PreviousModel: "gpt-5-mini"},
		{Command: ":provider none", Switch: "provider", PreviousProfile: "fast", PreviousModel: "gpt-5-mini", PreviousEffort: "low"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kitsoki.agent.switched (-want +got):\n%s", diff)
	}
}
