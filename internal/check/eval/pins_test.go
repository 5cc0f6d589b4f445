package eval

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/routes"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// measured copies testdata/audit, runs its eval live and writes the report
// where a pin cites it: evals/reports/audit/latest.json. In that report
// agent.good and agent.flaky pass, agent.bad fails.
func measured(t *testing.T) string {
	t.Helper()
	dir := copyStory(t)
	c := mustCheck(t, filepath.Join(dir, "evals", "audit.yaml"))
	r, err := Run(context.Background(), c, Options{Registry: testAgents(t, c.Story), Clock: clock.NewFake(t0), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	p, err := WriteReport(c.Dataset.ReportsDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	validateReportFile(t, p)
	return dir
}

// pinAudit adds selection to the audit invoke and loads the story.
func pinAudit(t *testing.T, dir, selection string) *story.Story {
	t.Helper()
	setDataset(t, filepath.Join(dir, "app.yaml"), func(s string) string {
		return strings.Replace(s, "        bind: {verdict: submitted}\n    on:", "        bind: {verdict: submitted}\n        selection: "+selection+"\n    on:", 1)
	})
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func auditInvoke(t *testing.T, st *story.Story) *story.Invoke {
	t.Helper()
	site, err := routes.FindCallSite(st, "audit")
	if err != nil {
		t.Fatal(err)
	}
	return site.Invoke
}

const ev = "evidence: evals/reports/audit/latest.json"

// A pin whose evidence is present, fresh and passing routes the call to
// the pinned profile, model and effort; agent.call.start says so.
func TestPinHonoured(t *testing.T) {
	dir := measured(t)
	st := pinAudit(t, dir, "{profile: agent.flaky, model: m-default, effort: low, "+ev+", fallback_profile: agent.bad}")
	pins := routes.Resolve(st)
	if len(pins.Warnings) != 0 || pins.Err() != nil {
		t.Fatalf("warnings: %q", pins.Warnings)
	}
	inv := auditInvoke(t, st)
	want := &host.Route{Profile: "agent.flaky", Alias: "agent.flaky", Model: "m-default", Effort: "low",
		Pin: &host.PinState{Applied: true, Evidence: "evals/reports/audit/latest.json"}}
	if diff := cmp.Diff(want, pins.Routes[inv]); diff != "" {
		t.Fatalf("route (-want +got):\n%s", diff)
	}

	sink := trace.NewMemSink()
	h := host.New(st, testAgents(t, st), sink, host.WithRoutes(pins.Routes))
	defer h.Close()
	res, err := h.Dispatch(context.Background(), &host.Call{Namespace: "host.agent.decide", Invoke: inv, Turn: 1, State: "reviewing",
		Args: map[string]any{"agent": "auditor", "prompt": "prompts/audit.md", "schema": "schemas/verdict.json", "call": "audit",
			"args": map[string]any{"claim": "taxi", "amount": 30}}})
	if err != nil || res.Err != nil {
		t.Fatalf("dispatch: %v %v", err, res.Err)
	}
	if got := res.Data["submitted"].(map[string]any)["reason"]; got != "guess" {
		t.Errorf("answered by %v, want agent.flaky (reason guess)", got)
	}
	start := sink.Events()[0]
	if start.Kind != trace.KindAgentCallStart {
		t.Fatalf("first event %s", start.Kind)
	}
	for k, v := range map[string]any{"profile": "agent.flaky", "model": "m-default", "effort": "low", "pinned": true,
		"pin_evidence": "evals/reports/audit/latest.json", "agent": "auditor"} {
		if start.Payload[k] != v {
			t.Errorf("agent.call.start %s = %v, want %v (payload %v)", k, start.Payload[k], v, start.Payload)
		}
	}
}

// Pins that cannot be honoured warn, naming the call, the report and why,
// and route to the fallback profile or the invoke's own agent.
func TestPinNotHonoured(t *testing.T) {
	tests := []struct {
		name      string
		selection string
		before    func(t *testing.T, dir string)
		warning   string
		alias     string
		profile   string
	}{
		{name: "missing", selection: "{profile: agent.flaky, evidence: evals/reports/audit/nothere.json, fallback_profile: agent.bad}",
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/nothere.json is missing (run kitsoki eval run --live to produce it); using fallback profile "agent.bad"`,
			alias:   "agent.bad", profile: "agent.bad"},
		{name: "stale prompt", selection: "{profile: agent.flaky, " + ev + ", fallback_profile: agent.bad}",
			before: func(t *testing.T, dir string) {
				testkit.WriteFile(t, dir, "prompts/audit.md", "Claim: {{ args.claim }}\nAmount: {{ args.amount }}\nBe strict.\n")
			},
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/latest.json is stale (prompt_hash changed since it was measured; re-run the eval); using fallback profile "agent.bad"`,
			alias:   "agent.bad", profile: "agent.bad"},
		{name: "stale dataset", selection: "{profile: agent.flaky, " + ev + "}",
			before: func(t *testing.T, dir string) {
				setDataset(t, filepath.Join(dir, "evals", "audit.yaml"), func(s string) string { return s + "# edited\n" })
			},
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/latest.json is stale (dataset_hash changed since it was measured; re-run the eval); using the default route (agent.good)`,
			alias:   "agent.good", profile: "agent.good"},
		{name: "stale toolbox", selection: "{profile: agent.flaky, " + ev + "}",
			before: func(t *testing.T, dir string) {
				setDataset(t, filepath.Join(dir, "app.yaml"), func(s string) string { return strings.Replace(s, "tools: [read, grep]", "tools: [read]", 1) })
			},
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/latest.json is stale (toolbox_hash changed since it was measured; re-run the eval); using the default route (agent.good)`,
			alias:   "agent.good", profile: "agent.good"},
		{name: "failing candidate", selection: "{profile: agent.bad, model: m-default, effort: low, " + ev + "}",
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/latest.json is failing: candidate agent.bad/m-default effort=low did not pass the adherence bar; using the default route (agent.good)`,
			alias:   "agent.good", profile: "agent.good"},
		{name: "candidate not measured", selection: "{profile: agent.crash, " + ev + "}",
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/latest.json is failing: it measured no candidate agent.crash/; using the default route (agent.good)`,
			alias:   "agent.good", profile: "agent.good"},
		{name: "no evidence", selection: "{profile: agent.flaky, fallback_profile: claude}",
			warning: `pin for call "audit" not applied: it cites no evidence report (set selection.evidence to the call's latest.json); using fallback profile "claude"`,
			alias:   "", profile: "claude"},
		{name: "unknown fallback", selection: "{profile: agent.flaky, evidence: evals/reports/audit/nothere.json, fallback_profile: nobody}",
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/nothere.json is missing (run kitsoki eval run --live to produce it); fallback_profile cannot be used (profile "nobody" is neither "claude" (the built-in claude path), an agent_plugins alias (agent.bad, agent.claude, agent.crash, agent.flaky, agent.good, agent.local, agent.retry, agent.slow), a providers: entry (none declared) nor a .kitsoki.yaml profile); using the default route (agent.good)`,
			alias:   "agent.good", profile: "agent.good"},
		{name: "unknown pinned profile", selection: "{profile: nobody, " + ev + "}",
			warning: `pin for call "audit" not applied: evidence evals/reports/audit/latest.json is failing: it measured no candidate nobody/; using the default route (agent.good)`,
			alias:   "agent.good", profile: "agent.good"},
		{name: "not a string", selection: "{profile: 3, " + ev + "}",
			warning: `pin for call "audit" ignored: selection.profile must be a string, got 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := measured(t)
			if tt.before != nil {
				tt.before(t, dir)
			}
			st := pinAudit(t, dir, tt.selection)
			pins := routes.Resolve(st)
			if diff := cmp.Diff([]string{tt.warning}, pins.Warnings); diff != "" {
				t.Fatalf("warnings (-want +got):\n%s", diff)
			}
			if err := pins.Err(); err == nil || !strings.Contains(err.Error(), tt.warning) || !strings.HasPrefix(err.Error(), "pins not honoured (--strict-pins):") {
				t.Errorf("strict error = %v", err)
			}
			r := pins.Routes[auditInvoke(t, st)]
			if tt.profile == "" {
				if r != nil {
					t.Errorf("an ignored selection routed the call: %+v", r)
				}
				return
			}
			if r == nil || r.Alias != tt.alias || r.Profile != tt.profile || r.Pin == nil || r.Pin.Applied || r.Pin.Reason == "" {
				t.Fatalf("route = %+v", r)
			}
		})
	}
}

// A selection with only evidence is metadata: no route, no warning. A
// report for another call is not evidence.
func TestPinMetadataAndWrongCall(t *testing.T) {
	dir := measured(t)
	st := pinAudit(t, dir, "{"+ev+"}")
	if pins := routes.Resolve(st); len(pins.Routes) != 0 || len(pins.Warnings) != 0 {
		t.Fatalf("metadata-only selection: %+v", pins)
	}

	setDataset(t, filepath.Join(dir, "app.yaml"), func(s string) string {
		return strings.Replace(s, "              bind: {verdict: submitted}\n", "              bind: {verdict: submitted}\n              selection: {profile: agent.flaky, "+ev+"}\n", 1)
	})
	st2, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	want := `pin for call "triage" not applied: evidence evals/reports/audit/latest.json is a report for call "audit", not "triage"; using the default route (agent.good)`
	if diff := cmp.Diff([]string{want}, routes.Resolve(st2).Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// The route of an unhonoured pin is recorded on agent.call.start.
func TestPinFallbackTraced(t *testing.T) {
	dir := measured(t)
	st := pinAudit(t, dir, "{profile: agent.flaky, evidence: evals/reports/audit/nothere.json, fallback_profile: agent.good}")
	pins := routes.Resolve(st)
	sink := trace.NewMemSink()
	h := host.New(st, testAgents(t, st), sink, host.WithRoutes(pins.Routes))
	defer h.Close()
	_, err := h.Dispatch(context.Background(), &host.Call{Namespace: "host.agent.decide", Invoke: auditInvoke(t, st), Turn: 1, State: "reviewing",
		Args: map[string]any{"agent": "auditor", "prompt": "prompts/audit.md", "schema": "schemas/verdict.json", "args": map[string]any{"claim": "x", "amount": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	p := sink.Events()[0].Payload
	if p["profile"] != "agent.good" || p["pinned"] != false || !strings.Contains(p["pin_reason"].(string), "is missing") || p["model"] != "m-default" {
		t.Errorf("start payload = %v", p)
	}
	if _, ok := p["effort"]; ok {
		t.Errorf("effort recorded without one: %v", p)
	}
}
