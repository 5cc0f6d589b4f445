package orchestrator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// bindFailStory has one decide call whose binds read its submission, as a
// template and as a path, once without on_error (plain) and once with it
// (handled); the on_error target reads host_error on entry.
const bindFailStory = `
app: {id: bindfail}
agent_plugins: {agent.c: {plugin: builtin.inprocess}}
world:
  x: {type: string, default: before}
  y: {type: string, default: before}
  ok: {type: bool, default: true}
  seen: {type: string, default: ""}
intents: {plain: {}, handled: {}}
root: s
states:
  s:
    on:
      plain:
        - target: "."
          effects:
            - invoke: host.agent.decide
              agent: agent.c
              with: &w {prompt: "one", schema: schema.json}
              bind: &b
                x: "{{ result.submitted.x }}"
                y: submitted.x
                ok: ok
      handled:
        - target: "."
          effects:
            - invoke: host.agent.decide
              agent: agent.c
              with: *w
              bind: *b
              on_error: failed
  failed:
    on_enter:
      - set: {seen: "{{ world.host_error.message }}"}
`

// A failed agent call binds nothing: the bind that reads result.submitted
// is not evaluated (it used to fault with "cannot fetch x from <nil>",
// hiding the call's error). Without on_error the call's AskError is the
// turn's host error; with on_error the redirect sees it in host_error. No
// machine.error is written, and harness.returned carries the call's error.
func TestFailedCallDoesNotBind(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	failures := []struct {
		name  string
		agent agent.Agent
		opts  []rigOpt
		err   string
	}{
		{"deadline_exceeded", lateAnswer(clk, time.Second), []rigOpt{withHostOpts(host.WithClock(clk), host.WithDefaultTimeout(time.Second))},
			"agent: deadline_exceeded: no answer within the hard deadline of 1s; a late answer is discarded"},
		{"schema_invalid", answer(`{"x": 3}`), nil,
			"agent: schema_invalid: /x: type: got number, want string"},
		{"plugin_crash", scripted(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
			return nil, errString("boom")
		}), nil, "agent: plugin_crash: boom"},
	}
	for _, f := range failures {
		for _, handled := range []bool{false, true} {
			name := f.name + "/without on_error"
			if handled {
				name = f.name + "/with on_error"
			}
			t.Run(name, func(t *testing.T) {
				opts := append([]rigOpt{withAgent("agent.c", f.agent)}, f.opts...)
				r := newRig(t, files{"app.yaml": bindFailStory,
					"schema.json": `{"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}}`}, opts...)
				intent, wantState := "plain", "s"
				if handled {
					intent, wantState = "handled", "failed"
				}
				out := r.do(intent)
				if out.Outcome != OutcomeTransitioned || out.Err != nil {
					t.Fatalf("outcome %s, err %v; want transitioned without a fault", out.Outcome, out.Err)
				}
				var hostErrs, handledErrs []string
				for _, e := range out.HostErrors {
					hostErrs = append(hostErrs, e.Error())
				}
				for _, h := range out.Handled {
					if _, ok := agent.AsAskError(h.Err); !ok {
						t.Errorf("handled error %v is not an AskError", h.Err)
					}
					handledErrs = append(handledErrs, h.Err.Error())
				}
				wantHost, wantHandled := []string{"host.agent.decide: " + f.err}, []string(nil)
				if handled {
					wantHost, wantHandled = nil, []string{f.err}
				}
				if diff := cmp.Diff(wantHost, hostErrs); diff != "" {
					t.Errorf("host errors (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(wantHandled, handledErrs); diff != "" {
					t.Errorf("handled errors (-want +got):\n%s", diff)
				}
				if out.State != wantState {
					t.Errorf("state = %q, want %q", out.State, wantState)
				}
				w := r.sess.World()
				wantWorld := map[string]any{"x": "before", "y": "before", "ok": true, "last_error": f.err, "seen": ""}
				if handled {
					wantWorld["seen"] = f.err
				}
				got := map[string]any{}
				for k := range wantWorld {
					got[k] = w[k]
				}
				if diff := cmp.Diff(wantWorld, got); diff != "" {
					t.Errorf("world (-want +got):\n%s", diff)
				}
				if evs := r.events(trace.KindMachineError); len(evs) != 0 {
					t.Errorf("machine.error written: %v", evs[0].Payload)
				}
				ret := r.events(trace.KindHarnessReturned)
				if len(ret) != 1 || ret[0].Payload["error"] != f.err {
					t.Errorf("harness.returned = %v, want one with error %q", ret, f.err)
				}
				for _, ev := range r.events(trace.KindWorldUpdate) {
					set, _ := ev.Payload["set"].(map[string]any)
					for _, k := range []string{"x", "y", "ok"} {
						if _, ok := set[k]; ok && ev.Turn == 1 {
							t.Errorf("a bind of the failed call was traced: %v", ev.Payload)
						}
					}
				}
			})
		}
	}
}

// A call that succeeds binds every key as before.
func TestSucceededCallBinds(t *testing.T) {
	r := newRig(t, files{"app.yaml": bindFailStory, "schema.json": `{"type": "object"}`},
		withAgent("agent.c", answer(`{"x": "new"}`)))
	out := r.do("handled")
	if out.Outcome != OutcomeTransitioned || len(out.HostErrors)+len(out.Handled) != 0 || out.State != "s" {
		t.Fatalf("outcome %s state %s err %v host errors %v handled %v", out.Outcome, out.State, out.Err, out.HostErrors, out.Handled)
	}
	w := r.sess.World()
	got, _ := json.Marshal(map[string]any{"x": w["x"], "y": w["y"], "ok": w["ok"]})
	if string(got) != `{"ok":true,"x":"new","y":"new"}` {
		t.Errorf("binds = %s", got)
	}
}
