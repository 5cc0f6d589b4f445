package kitsokitest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/kitsokitest"
)

const (
	helloApp = "../stories/hello/app.yaml"
	demoTape = "../stories/hello/cassettes/demo.yaml"
)

// The hello story's own fixtures pass, one subtest each.
func TestRunFlowsHello(t *testing.T) {
	kitsokitest.RunFlows(t, helloApp)
}

// helperEnv selects which failing case TestHelper runs in a child test
// process; the parent checks its output and exit status.
const helperEnv = "KITSOKITEST_HELPER"

// TestHelper holds the cases that fail on purpose. It does nothing unless
// a test below runs it in a child process.
func TestHelper(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "failing-flow":
		kitsokitest.RunFlows(t, helloApp, kitsokitest.WithFlows("testdata/failing/*.yaml"))
	case "setup-error":
		kitsokitest.RunFlows(t, helloApp, kitsokitest.WithFlows("testdata/setup/*.yaml"))
	case "no-fixtures":
		kitsokitest.RunFlows(t, helloApp, kitsokitest.WithFlows("testdata/none/*.yaml"))
	case "cassette-agent-changed":
		s := kitsokitest.Replay(t, helloApp, demoTape,
			kitsoki.WithAgent("agent.demo", kitsokitest.CassetteAgent(t, changedTape(t), "agent.demo")))
		s.Step("greet name=Ada style=formal")
	case "changed-flow":
		kitsokitest.RunFlows(t, helloApp, kitsokitest.WithFlows("testdata/changed/*.yaml"))
	case "changed-request":
		kitsokitest.Replay(t, helloApp, changedTape(t)).Step("greet name=Ada style=formal")
	case "step-rejected":
		kitsokitest.Replay(t, helloApp, demoTape).Step("bye")
	case "cassette-agent-miss":
		s := kitsokitest.Replay(t, helloApp, demoTape,
			kitsoki.WithAgent("agent.demo", kitsokitest.CassetteAgent(t, "testdata/empty.yaml", "agent.demo")))
		s.Step("greet name=Ada") // on_error: lobby handles the miss; the cleanup fails the test
	}
}

// runHelper runs TestHelper's case in a child process and returns its
// output; the child must fail.
func runHelper(t *testing.T, which string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+which)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("helper %s: err %v, want exit status 1; output:\n%s", which, err, out)
	}
	return string(out)
}

// A failing flow fails its subtest with `kitsoki test flows`' messages,
// each after where it failed.
func TestRunFlowsFailureMessages(t *testing.T) {
	tests := []struct {
		which string
		want  []string
	}{
		{"failing-flow", []string{
			"--- FAIL: TestHelper/wrong_state ",
			`turn 1 → greeted: expect_state: got "greeted", want "lobby"`,
			`[session]: expect_world_final["greetings"]: got 1 (int64), want 2 (int)`,
		}},
		{"setup-error", []string{
			"--- FAIL: TestHelper/missing_cassette ",
			`kitsoki test flows: missing_cassette.yaml: cassette: "testdata/setup/nowhere.yaml": open testdata/setup/nowhere.yaml: no such file or directory`,
		}},
		{"no-fixtures", []string{
			`kitsoki test flows: no flow fixtures match "testdata/none/*.yaml"`,
		}},
		{"cassette-agent-changed", []string{
			`kitsokitest.CassetteAgent("agent.demo"): cassette episode 1 "recorded_agent.demo_greeting" (agent.demo): recorded for a different request (hash 0000000000000000 ≠ 6def3da81df21156)`,
			`kitsokitest.CassetteAgent fails a request that differs from its recording: record the cassette again, or pass kitsokitest.WithLenientCassette()`,
		}},
		{"changed-flow", []string{
			"--- FAIL: TestHelper/greet ",
			`cassette episode 1 "recorded_agent.demo_greeting" (agent.demo): recorded for a different request (hash 0000000000000000 ≠ 6def3da81df21156)`,
			`kitsokitest.RunFlows fails a request that differs from its recording: record the cassette again, or pass kitsokitest.WithLenientCassette()`,
		}},
		{"changed-request", []string{
			`"greet name=Ada style=formal": `,
			`cassette episode 1 "recorded_agent.demo_greeting" (agent.demo): recorded for a different request (hash 0000000000000000 ≠ 6def3da81df21156)`,
			`kitsokitest.Replay refuses a request that differs from its recording: record the cassette again, or pass kitsokitest.Lenient() to replay it anyway`,
		}},
		{"step-rejected", []string{
			`"bye": GUARD_FAILED: no transition matched for intent "bye" in state "lobby"`,
		}},
		{"cassette-agent-miss", []string{
			`kitsokitest.CassetteAgent("agent.demo"): cassette testdata/empty.yaml: cassette miss: no episode matched handler="agent.demo"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.which, func(t *testing.T) {
			out := runHelper(t, tt.which)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// Replay drives the recorded run; Step returns each outcome.
func TestReplay(t *testing.T) {
	s := kitsokitest.Replay(t, helloApp, demoTape)
	if s.Start.View != "Greeted so far: 0. Try: greet name=Ada style=formal" {
		t.Errorf("start view = %q", s.Start.View)
	}
	var views []string
	for _, line := range []string{"greet name=Ada style=formal", "again", "greet name=Grace", "bye"} {
		views = append(views, s.Step(line).View)
	}
	want := []string{"Ada was greeted (formal).", "Greeted so far: 1. Try: greet name=Ada style=formal", "Grace was greeted (casual).", "Bye! 2 greeting(s) today."}
	if d := cmp.Diff(want, views); d != "" {
		t.Errorf("views (-want +got):\n%s", d)
	}
	if done, _ := s.Done(); !done {
		t.Error("not done after bye")
	}
	events, err := s.Events()
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, ev := range events {
		if ev.Kind == "agent.call.start" {
			eps = append(eps, ev.EpisodeID)
		}
	}
	if d := cmp.Diff([]string{"recorded_agent.demo_greeting", "recorded_agent.demo_greeting_2"}, eps); d != "" {
		t.Errorf("episodes played (-want +got):\n%s", d)
	}
}

// A cassette agent bound with kitsoki.WithAgent answers like the
// cassette transport.
func TestCassetteAgent(t *testing.T) {
	s, err := kitsoki.Open(helloApp, kitsoki.WithAgent("agent.demo", kitsokitest.CassetteAgent(t, demoTape, "agent.demo")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := s.Do(ctx, "greet name=Ada style=formal")
	if err != nil {
		t.Fatal(err)
	}
	if out.View != "Ada was greeted (formal)." {
		t.Errorf("view = %q", out.View)
	}
}

// changedTape is the demo cassette with its first episode's request_hash
// changed: the story's first request now differs from the recording.
func changedTape(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(demoTape)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "request_hash: 6def3da81df21156", "request_hash: 0000000000000000", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// With kitsokitest.Lenient() a changed request is answered from the
// recording, and the outcome carries the warning.
func TestReplayLenient(t *testing.T) {
	s := kitsokitest.Replay(t, helloApp, changedTape(t), kitsokitest.Lenient())
	out := s.Step("greet name=Ada style=formal")
	if out.View != "Ada was greeted (formal)." || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "recorded for a different request") {
		t.Errorf("view %q, warnings %q", out.View, out.Warnings)
	}
}

// WithLenientCassette lets a flow replay a changed request; the warning
// is logged.
func TestRunFlowsLenient(t *testing.T) {
	kitsokitest.RunFlows(t, helloApp, kitsokitest.WithFlows("testdata/changed/*.yaml"), kitsokitest.WithLenientCassette())
}
