package testrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// The agent conformance harness: one table of requests, each with the
// behaviour a scripted plugin shows for it, run through the host against
// every transport in the build. Every transport must hand the host
// byte-identical submissions and fail with identical error kinds.
//
// A transport joins by adding a conformanceTransport to transportsUnderTest
// whose build returns an agent that follows the scripts (keyed by the
// request's with.call). Features it cannot express go in lacks; cases that
// need them are skipped for it, with the reason.

// script is what the scripted plugin does for one request.
type script struct {
	Submission string          // raw submission bytes ("" = none)
	Meta       map[string]any  // meta to return
	SubEvents  []plugin.Event  // sub-events; CallID "$CALL" is replaced by the request's call_id
	ErrKind    agent.ErrorKind // fail with this kind ...
	ErrDetail  string          // ... and detail
	Delay      time.Duration   // answer after this long
}

// features a script needs, for transports that lack some.
func (s script) needs() []string {
	var out []string
	if len(s.SubEvents) > 0 {
		out = append(out, "sub_events")
	}
	return out
}

type conformanceCase struct {
	name    string
	verb    string
	schema  bool   // with.schema names the verdict schema
	timeout string // with.timeout
	script  script
	// Exactly one of the two: the submission the host accepts (its JSON as
	// the trace records it), or the error kind the call fails with.
	wantSub  string
	wantKind agent.ErrorKind
	wantErr  string // substring of the error text, when set
}

var conformanceCases = []conformanceCase{
	{name: "decide_valid", verb: "decide", schema: true,
		script:  script{Submission: `{"decision":"approve","confidence":0.91,"note":"Within policy — ✓"}`},
		wantSub: `{"confidence":0.91,"decision":"approve","note":"Within policy — ✓"}`},
	{name: "decide_whitespace_and_order", verb: "decide", schema: true,
		script:  script{Submission: "{\n  \"note\": \"x\",\n  \"decision\": \"reject\",\n  \"confidence\": 1\n}"},
		wantSub: `{"confidence":1,"decision":"reject","note":"x"}`},
	{name: "ask_text", verb: "ask",
		script:  script{Submission: `"plain answer"`},
		wantSub: `"plain answer"`},
	{name: "ask_object_no_schema", verb: "ask",
		script:  script{Submission: `{"anything":[1,2.5,"three"]}`},
		wantSub: `{"anything":[1,2.5,"three"]}`},
	{name: "ask_no_submission", verb: "ask", script: script{}, wantSub: `null`},
	{name: "schema_invalid", verb: "decide", schema: true,
		script:   script{Submission: `{"decision":"maybe","confidence":2}`},
		wantKind: agent.KindSchemaInvalid, wantErr: "/confidence"},
	{name: "schema_invalid_extra_property", verb: "decide", schema: true,
		script:   script{Submission: `{"decision":"approve","confidence":0.5,"extra":true}`},
		wantKind: agent.KindSchemaInvalid, wantErr: "extra"},
	{name: "malformed_json", verb: "decide", schema: true,
		script:   script{Submission: `{"decision":`},
		wantKind: agent.KindSchemaInvalid, wantErr: "not valid JSON"},
	{name: "plugin_crash", verb: "task",
		script:   script{ErrKind: agent.KindPluginCrash, ErrDetail: "subprocess agent: exit status 3"},
		wantKind: agent.KindPluginCrash, wantErr: "exit status 3"},
	{name: "transport_error", verb: "ask",
		script:   script{ErrKind: agent.KindTransportError, ErrDetail: "mcp_http agent: http 502: bad gateway"},
		wantKind: agent.KindTransportError, wantErr: "http 502"},
	{name: "deadline_overrun", verb: "ask", timeout: "50ms",
		script:   script{Submission: `"too late"`, Delay: 30 * time.Second},
		wantKind: agent.KindDeadlineExceeded},
	{name: "sub_events_land", verb: "ask",
		script: script{Submission: `"done"`, SubEvents: []plugin.Event{
			{Kind: "agent.under_test.bash.called", CallID: "$CALL", Payload: map[string]any{"cmd": "ls"}}}},
		wantSub: `"done"`},
	{name: "sub_event_namespace_violation", verb: "ask",
		script: script{Submission: `"x"`, SubEvents: []plugin.Event{
			{Kind: "agent.other.bash.called", CallID: "$CALL", Payload: map[string]any{}}}},
		wantKind: agent.KindSubEventNamespaceViolation, wantErr: `does not start with required namespace prefix "agent.under_test."`},
	{name: "sub_event_call_id_mismatch", verb: "ask",
		script: script{Submission: `"x"`, SubEvents: []plugin.Event{
			{Kind: "agent.under_test.note", CallID: "someone-else", Payload: map[string]any{}}}},
		wantKind: agent.KindSubEventCallIDMismatch, wantErr: `CallID "someone-else" does not match parent call_id`},
}

type conformanceTransport struct {
	name  string
	lacks map[string]string // feature → why the transport cannot express it
	build func(t *testing.T, cases []conformanceCase) agent.Agent
}

var transportsUnderTest = []conformanceTransport{
	{name: "inprocess", build: buildInProcess},
	{name: "cassette", build: buildCassette,
		lacks: map[string]string{"sub_events": "cassette episodes carry no sub-events"}},
}

// buildInProcess scripts a Go agent.
func buildInProcess(_ *testing.T, cases []conformanceCase) agent.Agent {
	byCall := map[string]script{}
	for _, c := range cases {
		byCall[c.name] = c.script
	}
	return agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		s := byCall[fmt.Sprint(req.With["call"])]
		if s.Delay > 0 {
			select {
			case <-time.After(s.Delay):
			case <-ctx.Done():
				return nil, agent.Errorf(agent.KindDeadlineExceeded, "inprocess: %w", ctx.Err())
			}
		}
		if s.ErrKind != "" {
			return nil, &agent.AskError{Kind: s.ErrKind, Detail: s.ErrDetail}
		}
		resp := &agent.AskResponse{Meta: s.Meta}
		if s.Submission != "" {
			resp.Submission = json.RawMessage(s.Submission)
		}
		for _, ev := range s.SubEvents {
			if ev.CallID == "$CALL" {
				ev.CallID = req.CallID
			}
			resp.SubEvents = append(resp.SubEvents, ev)
		}
		return resp, nil
	})
}

// buildCassette writes the scripts as cassette episodes (matched on
// call), through the YAML a user would write, and replays them.
func buildCassette(t *testing.T, cases []conformanceCase) agent.Agent {
	var eps []map[string]any
	for _, c := range cases {
		ab := map[string]any{"verb": c.verb}
		if c.script.ErrKind != "" {
			ab["error"] = (&agent.AskError{Kind: c.script.ErrKind, Detail: c.script.ErrDetail}).Error()
		} else if c.script.Submission != "" {
			ab["response"] = cassette.ResponseText(json.RawMessage(c.script.Submission))
		}
		ep := map[string]any{"id": c.name, "match": map[string]any{"handler": "agent.under_test", "call": c.name}, "agent": ab}
		if c.script.Delay > 0 {
			ep["delay"] = c.script.Delay.String()
		}
		eps = append(eps, ep)
	}
	b, err := yaml.Marshal(map[string]any{"kind": cassette.CassetteKind, "app_id": "conformance", "episodes": eps})
	if err != nil {
		t.Fatal(err)
	}
	c := mustCassette(t, string(b), cassette.WithClock(clock.NewFake(FlowEpoch)))
	return cassette.NewAgent(c.Cassette, "agent.under_test")
}

// conformanceOutcome is what a transport made of one case, as the host
// recorded it.
type conformanceOutcome struct {
	sub     string // the accepted submission's JSON in agent.call.complete
	kind    agent.ErrorKind
	errText string
	subEvs  int
}

func runConformanceCase(t *testing.T, st *story.Story, a agent.Agent, c conformanceCase) conformanceOutcome {
	t.Helper()
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	reg.Register("agent.under_test", a)
	sink := trace.NewMemSink()
	h := host.New(st, reg, sink)
	args := map[string]any{"call": c.name, "prompt": "Do " + c.name + "."}
	if c.schema {
		args["schema"] = "schemas/verdict.json"
	}
	if c.timeout != "" {
		args["timeout"] = c.timeout
	}
	res, err := h.Dispatch(context.Background(), &host.Call{Namespace: host.AgentNamespace + c.verb, Args: args,
		Invoke: &story.Invoke{Name: host.AgentNamespace + c.verb, Agent: "agent.under_test", ID: c.name}, SessionID: "conf", Turn: 1, State: "s"})
	if err != nil {
		t.Fatalf("dispatch: %v", err)
	}
	var out conformanceOutcome
	if res.Err != nil {
		ae, ok := agent.AsAskError(res.Err)
		if !ok {
			t.Fatalf("result error is not an AskError: %v", res.Err)
		}
		out.kind, out.errText = ae.Kind, ae.Error()
	}
	for _, ev := range sink.Events() {
		switch {
		case ev.Kind == trace.KindAgentCallComplete:
			resp, _ := ev.Payload["response"].(map[string]any)
			b, err := json.Marshal(resp["submission"])
			if err != nil {
				t.Fatal(err)
			}
			out.sub = string(b)
		case strings.HasPrefix(ev.Kind, "agent.under_test."):
			out.subEvs++
		}
	}
	return out
}

func TestAgentConformance(t *testing.T) {
	st, err := story.Load("testdata/conformance/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := map[string]map[string]conformanceOutcome{} // case → transport → outcome
	for _, tr := range transportsUnderTest {
		a := tr.build(t, conformanceCases)
		for _, c := range conformanceCases {
			t.Run(tr.name+"/"+c.name, func(t *testing.T) {
				for _, f := range c.script.needs() {
					if why, ok := tr.lacks[f]; ok {
						t.Skipf("%s: %s", f, why)
					}
				}
				out := runConformanceCase(t, st, a, c)
				if got[c.name] == nil {
					got[c.name] = map[string]conformanceOutcome{}
				}
				got[c.name][tr.name] = out
				if c.wantKind != "" {
					if out.kind != c.wantKind || !strings.Contains(out.errText, c.wantErr) {
						t.Errorf("error = %q (kind %q), want kind %q containing %q", out.errText, out.kind, c.wantKind, c.wantErr)
					}
					return
				}
				if out.kind != "" {
					t.Fatalf("unexpected error %q", out.errText)
				}
				if out.sub != c.wantSub {
					t.Errorf("submission = %s, want %s", out.sub, c.wantSub)
				}
				if want := len(c.script.SubEvents); out.subEvs != want {
					t.Errorf("%d sub-events landed, want %d", out.subEvs, want)
				}
			})
		}
	}
	// Across transports: identical submissions and error kinds (the
	// error texts of host-made errors too).
	for name, byTr := range got {
		var ref conformanceOutcome
		var refName string
		for _, tr := range transportsUnderTest {
			out, ok := byTr[tr.name]
			if !ok {
				continue
			}
			if refName == "" {
				ref, refName = out, tr.name
				continue
			}
			if out.sub != ref.sub || out.kind != ref.kind {
				t.Errorf("%s: %s gave (%s, %s), %s gave (%s, %s)", name, tr.name, out.sub, out.kind, refName, ref.sub, ref.kind)
			}
			if ref.kind == agent.KindSchemaInvalid && out.errText != ref.errText {
				t.Errorf("%s: schema_invalid text differs: %s: %q, %s: %q", name, tr.name, out.errText, refName, ref.errText)
			}
		}
	}
}
