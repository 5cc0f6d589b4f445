package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
	"github.com/spf13/cobra"
)

func TestStartRunDrivesAStory(t *testing.T) {
	abs, err := filepath.Abs(hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the run's trace goes under ./.kitsoki/runs
	start := startRun(&globals{logLevel: "error"}, &cobra.Command{}, nil)
	res, err := start(context.Background(), mcpserve.StartRunRequest{Story: abs, Intents: []string{"greet name=Ada", "bye"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != "farewell" || !res.Terminal || res.RunID == "" {
		t.Errorf("result = %+v", res)
	}
	if _, err := os.Stat(res.Trace); err != nil {
		t.Errorf("trace: %v", err)
	}
	_, err = start(context.Background(), mcpserve.StartRunRequest{Story: abs, Intents: []string{"bye"}})
	if err == nil || !strings.Contains(err.Error(), `intent "bye" rejected: GUARD_FAILED`) {
		t.Errorf("rejected intent: err = %v", err)
	}
}

func TestRunRefusesAnExistingTrace(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	if code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--intents", "greet name=A,bye"); code != exitOK {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--intents", "greet name=A,bye")
	if code != exitFailure || !strings.Contains(errs, "already holds a session; pass another --trace path") {
		t.Errorf("second run on the same trace: exit %d: %s", code, errs)
	}
}

// The external surface's run-starting tool honours selection: pins as
// kitsoki run does: a pin whose evidence holds routes the call (pinned on
// agent.call.start); one whose evidence is missing takes the default route
// and the run still completes.
func TestStartRunHonoursPins(t *testing.T) {
	dir := copyHello(t)
	app := filepath.Join(dir, "app.yaml")
	orig, err := os.ReadFile(app)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the run's trace goes under ./.kitsoki/runs
	start := startRun(&globals{logLevel: "error"}, &cobra.Command{}, nil)
	for _, tt := range []struct {
		evidence string
		pinned   bool
	}{
		{"evals/reports/compose/latest.json", true},
		{"evals/reports/compose/missing.json", false},
	} {
		s := strings.Replace(string(orig), "        on_error: lobby\n",
			"        on_error: lobby\n        selection: {profile: agent.demo, model: scripted-demo, evidence: "+tt.evidence+"}\n", 1)
		if s == string(orig) {
			t.Fatal("hello app.yaml changed shape; update the test")
		}
		if err := os.WriteFile(app, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := start(context.Background(), mcpserve.StartRunRequest{Story: app, Intents: []string{"greet name=Ada", "bye"}})
		if err != nil {
			t.Fatalf("%s: %v", tt.evidence, err)
		}
		evs, err := trace.ReadFile(res.Trace)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Kind != trace.KindAgentCallStart {
				continue
			}
			n++
			if ev.Payload["pinned"] != tt.pinned || ev.Payload["profile"] != "agent.demo" {
				t.Errorf("%s: agent.call.start = %v, want pinned %v", tt.evidence, ev.Payload, tt.pinned)
			}
		}
		if n == 0 {
			t.Errorf("%s: no agent.call.start in %s", tt.evidence, res.Trace)
		}
	}
}

// The run-starting tool routes free text: lines of intents that are not
// typed, and every say line, through the tiers and the router plugin.
func TestStartRunRoutesFreeText(t *testing.T) {
	abs, err := filepath.Abs(routingStory)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	start := startRun(&globals{logLevel: "error"}, &cobra.Command{}, nil)
	res, err := start(context.Background(), mcpserve.StartRunRequest{Story: abs, Intents: []string{"show me the forecast for Tokyo", "quit"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []mcpserve.RouteResult{{Input: "show me the forecast for Tokyo", Tier: "router", Intent: "forecast", Slots: map[string]any{"city": "Tokyo"}, Confidence: 0.9}}
	if d := cmp.Diff(want, res.Routes); d != "" || res.State != "bye" || !res.Terminal {
		t.Errorf("intents: state %q terminal %v, routes (-want +got):\n%s", res.State, res.Terminal, d)
	}
	res, err = start(context.Background(), mcpserve.StartRunRequest{Story: abs, Say: []string{"show me the forecast for Tokyo", "it might rain"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Routes) != 2 || res.Routes[1].Tier != "default_intent" || res.State != "shown" || res.Terminal {
		t.Errorf("say: %+v", res)
	}
	_, err = start(context.Background(), mcpserve.StartRunRequest{Story: abs, Say: []string{"xyzzy"}})
	if want := `say "xyzzy" rejected: NO_MATCH: could not tell what "xyzzy" means here; rephrase, or type one of: forecast, quit`; err == nil || err.Error() != want {
		t.Errorf("no match: err = %v, want %s", err, want)
	}
}
