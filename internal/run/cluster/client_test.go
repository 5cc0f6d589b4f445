package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

func TestDialErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Dial(ctx, ClientOptions{})
	want := "no Temporal server: pass --temporal HOST:PORT (e.g. 127.0.0.1:7233, the address `make temporal-dev` serves)"
	if err == nil || err.Error() != want {
		t.Errorf("Dial with no address = %v, want %q", err, want)
	}
	ue := &UnreachableError{HostPort: "h:1", Err: errors.New("refused")}
	want = "cannot reach the Temporal server at h:1: refused; start one with `make temporal-dev` (127.0.0.1:7233) or pass --temporal HOST:PORT of a running cluster"
	if ue.Error() != want || !errors.Is(ue, ue.Err) {
		t.Errorf("UnreachableError = %q, want %q", ue.Error(), want)
	}
}

// TestTurnResultRebuildsTheOutcome: what a local run prints of a turn
// (says, view, errors, on_error-handled calls with their AskError) comes
// back from the update's result.
func TestTurnResultRebuildsTheOutcome(t *testing.T) {
	ae := &agent.AskError{Kind: agent.KindTransportError, Detail: "claude CLI not found"}
	out := &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, From: "a", State: "b", View: "v", Says: []string{"hi"},
		HostErrors: []error{errors.New("host.run: boom")},
		Handled:    []orchestrator.HandledError{{Namespace: "host.agent.decide", Call: "audit", CallID: "c1", Err: ae, OnError: "intake", Redirect: orchestrator.RedirectEntered}},
		Done:       true, Exit: "ok"}
	got := turnResult(out, 3).Orchestrator()
	if d := cmp.Diff(out, got, cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })); d != "" {
		t.Errorf("outcome (-want +got):\n%s", d)
	}
	if _, ok := agent.AsAskError(got.Handled[0].Err); !ok {
		t.Errorf("handled error %T is not an *agent.AskError", got.Handled[0].Err)
	}
}

// TestStatusQueryAttachAndTraceJSONL reads a session with the status
// query, the attach update and the trace_jsonl query on the SDK test
// suite.
func TestStatusQueryAttachAndTraceJSONL(t *testing.T) {
	ref, _ := helloRef(t)
	env := newEnv(t)
	var attached *SessionStatus
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(AttachUpdate, "a0", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("attach rejected: %v", err) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("attach: %v", err)
					return
				}
				attached = v.(*SessionStatus)
			},
		})
	}, 30*time.Second)
	var status SessionStatus
	var jsonl string
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryStatus)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Get(&status); err != nil {
			t.Fatal(err)
		}
		v, err = env.QueryWorkflow(QueryTraceJSONL)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Get(&jsonl); err != nil {
			t.Fatal(err)
		}
	}, 90*time.Second)
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, helloSteps[:1], &results, &rejected)
	env.RegisterDelayedCallback(func() { // bye after the reads: the session ends
		env.UpdateWorkflow(IntentUpdate, "bye", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("bye rejected: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, IntentRequest{Intent: "bye"})
	}, 3*time.Minute)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if attached == nil || !attached.Started || attached.State != "lobby" || attached.Turn != 0 || attached.Last == nil ||
		attached.Last.View == "" || !cmp.Equal(attached.Allowed, []string{"bye", "greet"}) {
		t.Errorf("attach = %+v", attached)
	}
	if status.State != "greeted" || status.Turn != 1 || status.Story != ref || status.SessionID != "s1" || status.Done ||
		status.World.Map()["name"] != "Ada" || status.Last == nil || status.Last.Turn != 1 || status.Updated.IsZero() {
		t.Errorf("status = %+v", status)
	}
	h, evs, err := trace.ReadAll(bytes.NewReader([]byte(jsonl)))
	if err != nil {
		t.Fatalf("trace_jsonl does not read as a trace: %v\n%s", err, jsonl)
	}
	if h.SessionID != "s1" || h.StoryPath != "hello/app.yaml" || h.StoryHash != ref.Hash || h.AppID != "hello" {
		t.Errorf("header = %+v", h)
	}
	if len(evs) == 0 || evs[len(evs)-1].Turn != 1 || !strings.Contains(jsonl, `"kind":"kitsoki.snapshot"`) {
		t.Errorf("trace_jsonl events end at turn %d, or hold no snapshot:\n%s", evs[len(evs)-1].Turn, jsonl)
	}
}

func TestClosedErrorText(t *testing.T) {
	for _, tc := range []struct {
		info SessionInfo
		want string
	}{
		{SessionInfo{ID: "s", Status: "completed", State: "farewell", Turn: 2}, `session s finished in state "farewell" at turn 2; start a new session`},
		{SessionInfo{ID: "s", Status: "timed_out"}, "session s is timed out; start a new session"},
		{SessionInfo{ID: "s", Status: "failed", Error: "boom"}, "session s is failed: boom; start a new session"},
	} {
		if got := (&ClosedError{Info: &tc.info}).Error(); got != tc.want {
			t.Errorf("ClosedError = %q, want %q", got, tc.want)
		}
	}
}
