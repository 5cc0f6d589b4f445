package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// auditShape is what a test compares of a kitsoki.api.call event.
type auditShape struct {
	Turn    int64
	State   string
	Payload map[string]any
	// Before is the kind of the event that follows it ("" at the end).
	Before string
}

func auditsOf(evs []trace.Event) []auditShape {
	var out []auditShape
	for i, e := range evs {
		if e.Kind != KindAPICall {
			continue
		}
		s := auditShape{Turn: e.Turn, State: e.StatePath, Payload: e.Payload}
		if i+1 < len(evs) {
			s.Before = evs[i+1].Kind
		}
		out = append(out, s)
	}
	return out
}

// TestAuditRecordsAreTraced writes the records of a new session (its
// input), a turn (its intent update) and a call that takes no turn (the
// audit update) into the trace, where a local Pool writes them: after
// turn 0, before the turn, between turns.
func TestAuditRecordsAreTraced(t *testing.T) {
	ref, _ := helloRef(t)
	env := newEnv(t)
	mcp := func(tool string) *Audit { return &Audit{Surface: "mcp", Tool: tool, Client: "c-1"} }
	var errs []string
	cb := func(name string) *testsuite.TestUpdateCallback {
		return &testsuite.TestUpdateCallback{
			OnReject: func(err error) { errs = append(errs, name+" rejected: "+err.Error()) },
			OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				if err != nil {
					errs = append(errs, name+": "+err.Error())
				}
			},
		}
	}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(AuditUpdate, "a1", cb("inspect"), *mcp("session_inspect_kitsoki"))
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(AuditUpdate, "a2", cb("no tool"), Audit{Surface: "mcp"})
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "u1", cb("greet"), IntentRequest{Intent: "greet", Slots: Value{map[string]any{"name": "Ada"}}, Audit: mcp("session_submit_kitsoki")})
	}, 3*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "u2", cb("bye"), IntentRequest{Intent: "bye"})
	}, 4*time.Minute)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1", Audit: &Audit{Surface: "mcp", Tool: "session_new_kitsoki"}})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "no tool rejected: an audit record names its tool") {
		t.Errorf("update errors: %q", errs)
	}
	v, err := env.QueryWorkflow(QueryTrace)
	if err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	if err := v.Get(&evs); err != nil {
		t.Fatal(err)
	}
	want := []auditShape{
		{Turn: 0, State: "lobby", Payload: map[string]any{"surface": "mcp", "tool": "session_new_kitsoki"}, Before: KindAPICall},
		{Turn: 0, State: "lobby", Payload: map[string]any{"surface": "mcp", "tool": "session_inspect_kitsoki", "client": "c-1"}, Before: KindAPICall},
		{Turn: 0, State: "lobby", Payload: map[string]any{"surface": "mcp", "tool": "session_submit_kitsoki", "client": "c-1"}, Before: trace.KindTurnInput},
	}
	if d := cmp.Diff(want, auditsOf(evs)); d != "" {
		t.Errorf("audit events (-want +got):\n%s", d)
	}
}

// TestContinueAsNewDropsTheAudit: the record of the call that created the
// session is written once, by the first run; the next run's input does
// not carry it.
func TestContinueAsNewDropsTheAudit(t *testing.T) {
	ref, _ := helloRef(t)
	env := newEnv(t)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(IntentUpdate, "u1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("rejected: %v", err) }, OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				if err != nil {
					t.Errorf("greet: %v", err)
				}
			}}, IntentRequest{Intent: "greet", Slots: Value{map[string]any{"name": "Ada"}}})
	}, time.Minute)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1", ContinueAsNewAfter: 1,
		Audit: &Audit{Surface: "mcp", Tool: "session_new_kitsoki"}})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want a continue-as-new, got %v", err)
	}
	var next SessionInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Audit != nil || next.Carried == nil {
		t.Errorf("the next run's input: audit %+v, carried %v", next.Audit, next.Carried != nil)
	}
}
