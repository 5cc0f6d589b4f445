package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeanthropic"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
)

// TestRunAnthropicProfileTracesUsageAndCost: the demo story on a
// backend: anthropic profile answers through the Messages API (the
// submit tool forced, the key in x-api-key), and the call's
// agent.call.complete carries what the API reported (tokens, cache
// writes and reads) and what it cost; the key is nowhere in the trace or
// the output.
func TestRunAnthropicProfileTracesUsageAndCost(t *testing.T) {
	an := fakeanthropic.NewFunc(t, func(body map[string]any) fakeanthropic.Reply {
		rep := anthropicGreeter(body)
		u := rep.Msg["usage"].(map[string]any)
		u["cache_creation_input_tokens"], u["cache_read_input_tokens"] = 1000, 3000
		rep.Msg["model"] = "claude-haiku-4-5-20251001"
		return rep
	})
	helloCopy(t, "profiles:\n  claude-api:\n    backend: anthropic\n    base_url: "+an.URL()+"\n    model: claude-haiku-4-5\n    api_key_env: KITSOKI_TEST_ANTHROPIC_KEY\n")
	t.Setenv("KITSOKI_TEST_ANTHROPIC_KEY", testKey)
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", "app.yaml", "--profile", "claude-api", "--trace", tr, "--intents", "greet name=Ada style=formal,bye")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "Good day. It is a pleasure.") {
		t.Errorf("stdout:\n%s", out)
	}
	if an.Count() != 1 || an.Header(0).Get("x-api-key") != testKey || an.Request(0)["model"] != "claude-haiku-4-5" || an.Request(0)["tool_choice"] == nil {
		t.Errorf("%d requests; the first: %v", an.Count(), an.Request(0))
	}
	ends := events(t, tr, trace.KindAgentCallComplete)
	var done trace.AgentCallComplete
	if len(ends) != 1 || trace.Decode(&ends[0], &done) != nil {
		t.Fatalf("agent.call.complete: %+v", ends)
	}
	if done.Meta["provider"] != "anthropic" || done.Meta["model"] != "claude-haiku-4-5-20251001" {
		t.Errorf("meta %v", done.Meta)
	}
	u, _ := done.Meta["usage"].(map[string]any)
	if got := fmt.Sprint(u["input_tokens"], " ", u["output_tokens"], " ", u["cache_creation_input_tokens"], " ", u["cache_read_input_tokens"]); got != "900 30 1000 3000" {
		t.Errorf("usage in the trace: %v", u)
	}
	// The model the API reports, claude-haiku-4-5: 900 input at $1/MTok, 30 output at $5/MTok, 1000
	// cache writes at $1.25/MTok, 3000 cache reads at $0.10/MTok.
	want := (900*1 + 30*5 + 1000*1.25 + 3000*0.1) / 1e6
	if got, ok := number.Float(done.Meta["cost_usd"]); !ok || got-want > 1e-12 || want-got > 1e-12 {
		t.Errorf("cost_usd in the trace %v, want %v", done.Meta["cost_usd"], want)
	}
	raw, _ := os.ReadFile(tr)
	if strings.Contains(string(raw)+out+errs, testKey) {
		t.Error("the API key is in the trace or the output")
	}
}

// TestEvalMaxCostStopsTheRun: kitsoki eval run --live --max-cost refuses
// the calls after the one that reached the cap, says so in one line,
// fails, and writes no report. One call at a time: with --parallel N the
// calls already in flight when the cap is reached finish.
func TestEvalMaxCostStopsTheRun(t *testing.T) {
	f := fakeopenai.NewFunc(t, greeter)
	dir := helloCopy(t, profileYAML(f))
	if err := os.WriteFile(filepath.Join(dir, "evals", "quick.yaml"), []byte(quickEval), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KITSOKI_TEST_OPENAI_KEY", testKey)
	reports := t.TempDir()
	// A greeting costs $0.000864 (see TestMaxCostStopsTheRun), over $0.0005.
	code, out, errs := runCLI(t, "", "eval", "run", "--live", "--profile", "fast", "--max-cost", "0.0005", "--parallel", "1",
		"--report-dir", reports, filepath.Join(dir, "evals", "quick.yaml"))
	want := "eval run stopped, no report written: cost cap reached: --max-cost is $0.0005 and this run's agent calls have cost $0.0009 (1 call); raise --max-cost to go on"
	if code != exitFailure || !strings.Contains(errs, want) {
		t.Errorf("exit %d (want %d)\nstderr:\n%s\nwant it to contain:\n%s\nstdout:\n%s", code, exitFailure, errs, want, out)
	}
	if f.Count() != 1 {
		t.Errorf("%d requests: the second call must not go out", f.Count())
	}
	if ents, _ := os.ReadDir(reports); len(ents) != 0 {
		t.Errorf("a report was written: %v", ents)
	}
}
