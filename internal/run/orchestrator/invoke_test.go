package orchestrator

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

const verdictSchema = `{
  "type": "object",
  "required": ["decision", "confidence"],
  "additionalProperties": false,
  "properties": {
    "decision": {"enum": ["approve", "reject"]},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "items": {"type": "array"}
  }
}`

// invokeStory has one decide call on entering "review", bound four ways.
const invokeStory = `
app: {id: invokes}
hosts: [host.agent.decide, host.agent.ask]
agents:
  judge: {system_prompt: "Judge.", model: judge-model}
agent_plugins:
  agent.judge: {plugin: builtin.inprocess}
world:
  verdict: {type: object, default: {}}
  first: {type: string}
  meta: {type: object}
  ok: {type: bool}
  code: {type: int}
  summary: {type: string}
  claim: {type: string, default: "taxi 40"}
intents: {review: {}, back: {}, approve: {hidden: true}}
root: idle
states:
  idle:
    on:
      review: [{target: review}]
  review:
    on_enter:
      - invoke: host.agent.decide
        agent: agent.judge
        id: judge_call
        with:
          agent: judge
          prompt: prompts/judge.md
          schema: schemas/verdict.json
          args: {claim: "{{ world.claim }}"}
        bind:
          verdict: submitted
          first: submission.items[0]
          meta: meta
          ok: ok
          code: exit_code
          summary: "{{ result.submission?.decision }}:{{ result.ok }}"
      - when: "world.verdict?.decision == 'approve'"
        emit_intent: approve
    on:
      approve: [{target: approved}]
      back: [{target: idle}]
  approved: {terminal: true}
`

func invokeFiles() files {
	return files{
		"app.yaml":             invokeStory,
		"prompts/judge.md":     "Judge the claim: {{ args.claim }}",
		"schemas/verdict.json": verdictSchema,
	}
}

// recorder is an in-process agent that keeps the requests it got.
type recorder struct {
	mu   sync.Mutex
	reqs []*agent.AskRequest
	cis  []*agent.Call
	resp func(req *agent.AskRequest) (*agent.AskResponse, error)
}

func (r *recorder) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	req := call.Request
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.cis = append(r.cis, call)
	r.mu.Unlock()
	return r.resp(req)
}

func (r *recorder) Close() error { return nil }

func TestDecideBindsEveryKey(t *testing.T) {
	rec := &recorder{resp: func(*agent.AskRequest) (*agent.AskResponse, error) {
		return &agent.AskResponse{Submission: json.RawMessage(`{"decision":"approve","confidence":0.9,"items":["a","b"]}`),
			Meta: map[string]any{"tokens": 12}}, nil
	}}
	r := newRig(t, invokeFiles(), withAgent("agent.judge", rec))
	out := r.do("review")
	if out.Outcome != OutcomeTransitioned || len(out.HostErrors) > 0 {
		t.Fatalf("outcome %s err %v host errors %v", out.Outcome, out.Err, out.HostErrors)
	}
	w := r.sess.World()
	want := map[string]string{
		"verdict": `{"confidence":0.9,"decision":"approve","items":["a","b"]}`,
		"first":   `"a"`,
		"meta":    `{"tokens":12}`,
		"ok":      `true`,
		"code":    `0`,
		"summary": `"approve:true"`,
	}
	for k, v := range want {
		if got := jsonOf(t, w[k]); got != v {
			t.Errorf("world[%s] = %s, want %s", k, got, v)
		}
	}
	// The post-bind pass fired the on_enter emit_intent once the verdict landed.
	if r.sess.State() != "approved" || !out.Done {
		t.Errorf("state = %s, want approved (post-bind emit)", r.sess.State())
	}
}

func TestAskRequestShape(t *testing.T) {
	rec := &recorder{resp: func(*agent.AskRequest) (*agent.AskResponse, error) {
		return &agent.AskResponse{Submission: json.RawMessage(`{"decision":"reject","confidence":0.1}`)}, nil
	}}
	r := newRig(t, invokeFiles(), withAgent("agent.judge", rec))
	before := time.Now()
	r.do("review")
	if len(rec.reqs) != 1 {
		t.Fatalf("agent got %d requests", len(rec.reqs))
	}
	req := rec.reqs[0]
	start := r.events(trace.KindAgentCallStart)[0]
	wantID := trace.CallID("invokes", "1:review:"+strconv.Itoa(start.Seq))
	if req.CallID != wantID || start.CallID != wantID {
		t.Errorf("call_id: request %q, trace %q, want %q", req.CallID, start.CallID, wantID)
	}
	if req.SessionID != "s1" || req.Turn != 1 || req.StatePath != "review" || req.Verb != "decide" {
		t.Errorf("envelope = %+v", req)
	}
	if req.Prompt != "Judge the claim: taxi 40" {
		t.Errorf("prompt = %q", req.Prompt)
	}
	if string(req.Schema) != verdictSchema {
		t.Errorf("schema not sent verbatim: %s", req.Schema)
	}
	wantWith := map[string]any{"agent": "judge", "prompt": "prompts/judge.md", "schema": "schemas/verdict.json",
		"args": map[string]any{"claim": "taxi 40"}, "call": "judge_call"}
	if diff := cmp.Diff(wantWith, req.With); diff != "" {
		t.Errorf("with (-want +got):\n%s", diff)
	}
	if req.World.Vars["claim"] != "taxi 40" {
		t.Errorf("world.vars = %v", req.World.Vars)
	}
	dl, err := time.Parse(time.RFC3339Nano, req.Deadline)
	if err != nil || dl.Before(before.Add(host.DefaultTimeout-time.Minute)) {
		t.Errorf("deadline = %q (%v)", req.Deadline, err)
	}
	b, _ := json.Marshal(req)
	if !strings.Contains(string(b), `"world":{"vars":{`) {
		t.Errorf("world is not wrapped in vars: %s", b)
	}
	ci := rec.cis[0]
	if ci == nil || ci.Alias != "agent.judge" || ci.Persona == nil || ci.Model != "judge-model" || ci.SchemaPath != "schemas/verdict.json" || ci.Validate == nil {
		t.Errorf("call = %+v", ci)
	}
	if err := ci.Validate([]byte(`{"decision":"maybe"}`)); err == nil {
		t.Error("Call.Validate accepted an invalid submission")
	}
	if got := jsonOf(t, start.Payload); got != `{"agent":"judge","input":{"schema_present":true},"model":"judge-model","prompt":"Judge the claim: taxi 40","verb":"decide"}` {
		t.Errorf("agent.call.start payload = %s", got)
	}
	complete := r.events(trace.KindAgentCallComplete)
	if len(complete) != 1 || complete[0].CallID != wantID {
		t.Fatalf("agent.call.complete = %v", complete)
	}
	resp := complete[0].Payload["response"].(map[string]any)
	if got := jsonOf(t, resp["submission"]); got != `{"confidence":0.1,"decision":"reject"}` {
		t.Errorf("complete response.submission = %s", got)
	}
	if _, ok := complete[0].Payload["duration_ms"]; !ok {
		t.Error("complete has no duration_ms")
	}
}

func TestAgentErrors(t *testing.T) {
	okVerdict := `{"decision":"approve","confidence":0.5}`
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tests := []struct {
		name  string
		agent agent.Agent
		opts  []rigOpt
		want  string // the AskError text
	}{
		{"bad JSON", answer(`{"decision":`), nil,
			"agent: schema_invalid: submission is not valid JSON: unexpected EOF"},
		{"schema invalid", answer(`{"decision":"maybe","confidence":3}`), nil,
			"agent: schema_invalid: /confidence: maximum: got 3, want 1; /decision: enum: value must be one of 'approve', 'reject'"},
		{"empty submission", answer(``), nil,
			"agent: schema_invalid: submission is not valid JSON: empty submission"},
		{"sub-event outside the namespace", scripted(func(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
			req := call.Request
			return &agent.AskResponse{Submission: json.RawMessage(okVerdict), SubEvents: []plugin.Event{
				{Kind: "agent.judge.tool", CallID: req.CallID}, {Kind: "agent.other.tool", CallID: req.CallID}}}, nil
		}), nil, `agent: sub_event_namespace_violation: sub_event[1]: Kind "agent.other.tool" does not start with required namespace prefix "agent.judge."`},
		{"sub-event call_id mismatch", scripted(func(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
			return &agent.AskResponse{Submission: json.RawMessage(okVerdict), SubEvents: []plugin.Event{{Kind: "agent.judge.tool", CallID: "nope"}}}, nil
		}), nil, `agent: sub_event_call_id_mismatch: sub_event[0]: CallID "nope" does not match parent call_id "`},
		{"answers past the deadline", lateAnswer(clk, 50*time.Millisecond), []rigOpt{withHostOpts(host.WithClock(clk), host.WithDefaultTimeout(50*time.Millisecond))},
			"agent: deadline_exceeded: no answer within the hard deadline of 50ms; a late answer is discarded"},
		{"plain error", scripted(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
			return nil, errString("boom")
		}), nil, "agent: plugin_crash: boom"},
		{"transport error", scripted(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
			return nil, agent.Errorf(agent.KindTransportError, "http 502: bad gateway")
		}), nil, "agent: transport_error: http 502: bad gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]rigOpt{withAgent("agent.judge", tt.agent)}, tt.opts...)
			r := newRig(t, invokeFiles(), opts...)
			out := r.do("review")
			if len(out.HostErrors) != 1 || !strings.Contains(out.HostErrors[0].Error(), tt.want) {
				t.Fatalf("host errors = %v, want one containing %q", out.HostErrors, tt.want)
			}
			ae, ok := agent.AsAskError(out.HostErrors[0])
			if !ok {
				t.Fatalf("%v is not an AskError", out.HostErrors[0])
			}
			starts, errs := r.events(trace.KindAgentCallStart), r.events(trace.KindAgentCallError)
			if len(starts) != 1 || len(errs) != 1 || len(r.events(trace.KindAgentCallComplete)) != 0 {
				t.Fatalf("agent events: %d start, %d error, want 1 and 1 and no complete", len(starts), len(errs))
			}
			if errs[0].CallID != starts[0].CallID || errs[0].Payload["error"] != ae.Error() || errs[0].Payload["error_kind"] != string(ae.Kind) {
				t.Errorf("agent.call.error = %v", errs[0])
			}
			for _, ev := range r.events() {
				if strings.HasPrefix(ev.Kind, "agent.judge.") {
					t.Errorf("a sub-event landed on a failed call: %v", ev)
				}
			}
			w := r.sess.World()
			if w["last_error"] != ae.Error() {
				t.Errorf("last_error = %v", w["last_error"])
			}
			he, _ := w["host_error"].(map[string]any)
			if he["namespace"] != "host.agent.decide" || he["message"] != ae.Error() {
				t.Errorf("host_error = %v", he)
			}
			// A failed call binds nothing, not even ok/exit_code from its data.
			for _, k := range []string{"verdict", "first", "meta", "ok", "code", "summary"} {
				if v, set := w[k]; set && v != nil && jsonOf(t, v) != "{}" {
					t.Errorf("world[%s] = %s after a failed call, want it unbound", k, jsonOf(t, v))
				}
			}
			ret := r.events(trace.KindHarnessReturned)
			if len(ret) != 1 || ret[0].Payload["error"] != ae.Error() {
				t.Errorf("harness.returned = %v", ret)
			}
			if r.sess.State() != "review" {
				t.Errorf("state = %s, want review", r.sess.State())
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestSubEventsLandInsideTheCall(t *testing.T) {
	a := scripted(func(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		return &agent.AskResponse{
			Submission: json.RawMessage(`{"decision":"reject","confidence":1}`),
			SubEvents: []plugin.Event{
				{Kind: "agent.judge.bash.called", CallID: req.CallID, Turn: 99, StatePath: "elsewhere", TS: "2001-01-01T00:00:00Z", Payload: map[string]any{"cmd": "ls"}},
				{Kind: "agent.judge.bash.done", CallID: req.CallID},
			}}, nil
	})
	r := newRig(t, invokeFiles(), withAgent("agent.judge", a))
	r.do("review")
	var kinds []string
	var start, end time.Time
	for _, ev := range r.events() {
		if ev.Turn != 1 || !(strings.HasPrefix(ev.Kind, "agent.")) {
			continue
		}
		kinds = append(kinds, ev.Kind)
		ts, err := time.Parse(time.RFC3339Nano, ev.TS)
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case trace.KindAgentCallStart:
			start = ts
		case trace.KindAgentCallComplete:
			end = ts
		default:
			if ts.Before(start) || ts.After(end) && !end.IsZero() || ts.Year() == 2001 {
				t.Errorf("sub-event ts %s not re-stamped inside the call", ev.TS)
			}
			if ev.Turn != 1 || ev.StatePath != "review" {
				t.Errorf("sub-event keeps the plugin's turn/state: %d %q", ev.Turn, ev.StatePath)
			}
		}
	}
	want := []string{"agent.call.start", "agent.judge.bash.called", "agent.judge.bash.done", "agent.call.complete"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("agent events (-want +got):\n%s", diff)
	}
}

func TestRoutingErrors(t *testing.T) {
	const st = `
app: {id: routes}
agent_plugins:
  agent.inproc: {plugin: builtin.inprocess}
  agent.remote: {plugin: mcp_http, endpoint: "http://127.0.0.1:1/mcp"}
intents: {a: {}, b: {}, c: {}}
root: s
states:
  s:
    on:
      a: [{target: ".", effects: [{invoke: host.agent.ask, agent: agent.inproc, with: {prompt: "hi"}}]}]
      b: [{target: ".", effects: [{invoke: host.agent.ask, agent: agent.remote, with: {prompt: "hi"}}]}]
      c: [{target: ".", effects: [{invoke: host.agent.ask, with: {prompt: "hi"}}]}]
`
	tests := []struct{ line, want string }{
		{"a", `agent: transport_error: builtin.inprocess agent "agent.inproc" has no implementation: register one from Go code with Registry.RegisterInProcess`},
		{"b", `agent: transport_error: plugin "mcp_http" (alias "agent.remote") is not available in this build`},
		{"c", `host.agent.ask: the built-in claude path (an invoke with no agent:) is not available in this build; name an agent_plugins alias with agent:`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": st}) // no transports registered
			out := r.do(tt.line)
			if len(out.HostErrors) != 1 || !strings.HasSuffix(out.HostErrors[0].Error(), tt.want) {
				t.Fatalf("host errors = %v, want %q", out.HostErrors, tt.want)
			}
		})
	}
}

func TestDecideWithoutSchemaFailsBeforeDispatch(t *testing.T) {
	const st = `
app: {id: noschema}
agent_plugins: {agent.x: {plugin: builtin.inprocess}}
intents: {a: {}}
root: s
states:
  s:
    on:
      a: [{target: ".", effects: [{invoke: host.agent.decide, agent: agent.x, with: {prompt: "hi"}}]}]
`
	called := false
	r := newRig(t, files{"app.yaml": st}, withAgent("agent.x", scripted(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		called = true
		return &agent.AskResponse{}, nil
	})))
	out := r.do("a")
	if called || len(r.events(trace.KindAgentCallStart)) != 0 {
		t.Error("a decide without schema reached the agent")
	}
	if len(out.HostErrors) != 1 || !strings.Contains(out.HostErrors[0].Error(), "host.agent.decide: with.schema is required") {
		t.Errorf("host errors = %v", out.HostErrors)
	}
}
