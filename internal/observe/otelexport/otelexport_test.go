package otelexport

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ts(ms int) string { return t0.Add(time.Duration(ms) * time.Millisecond).Format(time.RFC3339Nano) }

type step struct {
	ev trace.Event
	p  trace.Payload
}

// export feeds the steps to an exporter over an in-memory span exporter.
func export(t *testing.T, content bool, steps []step) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	mem := keep{tracetest.NewInMemoryExporter()}
	e, err := New(context.Background(), Options{Exporter: mem, Content: content,
		Masker: secret.New([]string{"s3cr3t-token"}), Session: Session{ID: "sess-1", AppID: "app"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		e.Observe(&steps[i].ev, steps[i].p)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range mem.GetSpans().Snapshots() {
		out[s.Name()] = s
	}
	return out
}

// keep is the in-memory exporter without its reset on Shutdown.
type keep struct{ *tracetest.InMemoryExporter }

func (keep) Shutdown(context.Context) error { return nil }

func attr(s sdktrace.ReadOnlySpan, k string) any {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == k {
			return kv.Value.AsInterface()
		}
	}
	return nil
}

// A turn with one invoke whose agent call fails, and one whose agent
// answers with usage and cost.
var turn = []step{
	{trace.Event{Turn: 0, TS: ts(0), Kind: trace.KindMachineTransition}, trace.MachineTransition{Intent: trace.SeedIntent, To: "a"}},
	{trace.Event{Turn: 1, TS: ts(10), Kind: trace.KindTurnInput}, trace.TurnInput{Input: "go with s3cr3t-token", Intent: "go"}},
	{trace.Event{Turn: 1, TS: ts(11), Kind: trace.KindTurnStart}, trace.TurnStart{Input: "go", Turn: 1}},
	{trace.Event{Turn: 1, TS: ts(12), Kind: trace.KindMachineIntentAccepted}, trace.MachineIntentAccepted{Intent: "go"}},
	{trace.Event{Turn: 1, TS: ts(20), Kind: trace.KindHarnessDispatched}, trace.HarnessDispatched{Namespace: "host.agent.ask"}},
	{trace.Event{Turn: 1, TS: ts(21), Kind: trace.KindAgentCallStart, CallID: "c1"}, &trace.AgentCallStart{Agent: "writer", Verb: "ask", Model: "m-large", Prompt: "use s3cr3t-token"}},
	{trace.Event{Turn: 1, TS: ts(25), Kind: "agent.progress", CallID: "c1"}, nil},
	{trace.Event{Turn: 1, TS: ts(40), Kind: trace.KindAgentCallComplete, CallID: "c1"}, trace.AgentCallComplete{Agent: "writer", Verb: "ask", DurationMS: 19,
		Meta:     map[string]any{"model": "m-large-2", "transport": "claude_cli", "usage": map[string]any{"input_tokens": 120.0, "output_tokens": 30.0}, "cost_usd": 0.0125},
		Response: "done"}},
	{trace.Event{Turn: 1, TS: ts(41), Kind: trace.KindHarnessReturned}, trace.HarnessReturned{Namespace: "host.agent.ask"}},
	{trace.Event{Turn: 1, TS: ts(50), Kind: trace.KindHarnessDispatched}, trace.HarnessDispatched{Namespace: "host.agent.decide"}},
	{trace.Event{Turn: 1, TS: ts(51), Kind: trace.KindAgentCallStart, CallID: "c2"}, trace.AgentCallStart{Agent: "judge", Verb: "decide"}},
	{trace.Event{Turn: 1, TS: ts(60), Kind: trace.KindAgentCallError, CallID: "c2"}, trace.AgentCallError{Agent: "judge", Verb: "decide", ErrorKind: "timeout", Error: "agent: timeout: token s3cr3t-token expired"}},
	{trace.Event{Turn: 1, TS: ts(61), Kind: trace.KindHarnessReturned}, trace.HarnessReturned{Namespace: "host.agent.decide", Error: "agent: timeout"}},
	{trace.Event{Turn: 1, TS: ts(70), Kind: trace.KindTurnEnd}, trace.TurnEnd{Outcome: "error", Error: "agent: timeout"}},
}

func TestSpansOfATurn(t *testing.T) {
	spans := export(t, false, turn)
	for _, name := range []string{"kitsoki.session", "turn 1", "invoke host.agent.ask", "invoke_agent writer", "invoke host.agent.decide", "invoke_agent judge"} {
		if spans[name] == nil {
			t.Fatalf("no span %q (have %v)", name, spans)
		}
	}
	sess, tr := spans["kitsoki.session"], spans["turn 1"]
	ask, writer, judge := spans["invoke host.agent.ask"], spans["invoke_agent writer"], spans["invoke_agent judge"]
	if tr.Parent().SpanID() != sess.SpanContext().SpanID() || writer.Parent().SpanID() != ask.SpanContext().SpanID() ||
		ask.Parent().SpanID() != tr.SpanContext().SpanID() || judge.Parent().SpanID() != spans["invoke host.agent.decide"].SpanContext().SpanID() {
		t.Error("parents are wrong")
	}
	// The trace's own times, not the wall clock's.
	if !sess.StartTime().Equal(t0) || !writer.StartTime().Equal(t0.Add(21*time.Millisecond)) || !writer.EndTime().Equal(t0.Add(40*time.Millisecond)) || !tr.EndTime().Equal(t0.Add(70*time.Millisecond)) {
		t.Errorf("times: session %v, writer %v..%v, turn end %v", sess.StartTime(), writer.StartTime(), writer.EndTime(), tr.EndTime())
	}
	for k, want := range map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer", "gen_ai.request.model": "m-large",
		"gen_ai.response.model": "m-large-2", "gen_ai.provider.name": "anthropic",
		"gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(30), "kitsoki.cost_usd": 0.0125,
	} {
		if got := attr(writer, k); got != want {
			t.Errorf("writer %s = %v (%T), want %v", k, got, got, want)
		}
	}
	if attr(writer, "gen_ai.input.messages") != nil || attr(tr, "kitsoki.turn.input") != nil {
		t.Error("content exported without Content")
	}
	if len(writer.Events()) != 1 || writer.Events()[0].Name != "agent.progress" {
		t.Errorf("writer events = %v", writer.Events())
	}
	if judge.Status().Code != codes.Error || judge.Status().Description != "agent: timeout: token REDACTED expired" || attr(judge, "error.type") != "timeout" {
		t.Errorf("judge status = %+v, error.type %v", judge.Status(), attr(judge, "error.type"))
	}
	if tr.Status().Code != codes.Error || attr(tr, "kitsoki.turn.outcome") != "error" || attr(tr, "kitsoki.intent") != "go" {
		t.Errorf("turn status %+v attrs %v", tr.Status(), tr.Attributes())
	}
	if attr(sess, "kitsoki.session.id") != "sess-1" || attr(sess, "kitsoki.app.id") != "app" {
		t.Errorf("session attrs %v", sess.Attributes())
	}
}

func TestContentIsMasked(t *testing.T) {
	spans := export(t, true, turn)
	if spans["invoke_agent writer"] == nil || spans["turn 1"] == nil {
		t.Fatalf("spans: %v", spans)
	}
	in, _ := attr(spans["invoke_agent writer"], "gen_ai.input.messages").(string)
	if want := `[{"parts":[{"content":"use REDACTED","type":"text"}],"role":"user"}]`; in != want {
		t.Errorf("input messages = %s, want %s", in, want)
	}
	if got := attr(spans["turn 1"], "kitsoki.turn.input"); got != "go with REDACTED" {
		t.Errorf("turn input = %v", got)
	}
	out, _ := attr(spans["invoke_agent writer"], "gen_ai.output.messages").(string)
	if want := `[{"parts":[{"content":"done","type":"text"}],"role":"assistant"}]`; out != want {
		t.Errorf("output messages = %s", out)
	}
}

func TestCloseEndsOpenSpans(t *testing.T) {
	spans := export(t, false, turn[:7]) // the process stopped mid-call
	w := spans["invoke_agent writer"]
	if w == nil || w.Status().Code != codes.Error || w.Status().Description != "no end event in the trace" {
		t.Fatalf("open agent span at close: %+v", w)
	}
	if !w.EndTime().Equal(t0.Add(25 * time.Millisecond)) {
		t.Errorf("ended at %v, want the last event's time", w.EndTime())
	}
	if spans["turn 1"] == nil || spans["kitsoki.session"] == nil {
		t.Error("turn or session span not ended")
	}
}

func TestEnabled(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		flag string
		env  map[string]string
		want bool
	}{
		{"", nil, false},
		{"http://127.0.0.1:4318", nil, true},
		{"", map[string]string{EnvEndpoint: "http://127.0.0.1:4318"}, true},
		{"", map[string]string{EnvTracesEndpoint: "http://127.0.0.1:4318/v1/traces"}, true},
	} {
		if got := Enabled(c.flag, env(c.env)); got != c.want {
			t.Errorf("Enabled(%q, %v) = %v", c.flag, c.env, got)
		}
	}
}

// A journal writes decisions and snapshots after turn.end: they must not
// open a second span for the turn.
func TestEventsAfterTurnEndStayOnTheSession(t *testing.T) {
	mem := keep{tracetest.NewInMemoryExporter()}
	e, err := New(context.Background(), Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	steps := append(append([]step{}, turn...),
		step{trace.Event{Turn: 1, TS: ts(71), Kind: "kitsoki.decisions"}, nil},
		step{trace.Event{Turn: 1, TS: ts(72), Kind: "kitsoki.snapshot"}, nil})
	for i := range steps {
		e.Observe(&steps[i].ev, steps[i].p)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range mem.GetSpans().Snapshots() {
		if s.Name() == "turn 1" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d spans for turn 1, want 1", n)
	}
}

// A secret holding characters JSON escapes is masked in content exported
// as JSON (a structured answer), where it appears escaped (issue 28).
func TestEncodedSecretIsMaskedInContent(t *testing.T) {
	const tricky = `tok-"a\<b>&é-0123`
	steps := []step{
		{trace.Event{Turn: 0, TS: ts(0), Kind: trace.KindMachineTransition}, trace.MachineTransition{Intent: trace.SeedIntent, To: "a"}},
		{trace.Event{Turn: 1, TS: ts(10), Kind: trace.KindTurnInput}, trace.TurnInput{Input: "go " + tricky, Intent: "go"}},
		{trace.Event{Turn: 1, TS: ts(11), Kind: trace.KindTurnStart}, trace.TurnStart{Input: "go", Turn: 1}},
		{trace.Event{Turn: 1, TS: ts(20), Kind: trace.KindHarnessDispatched}, trace.HarnessDispatched{Namespace: "host.agent.decide"}},
		{trace.Event{Turn: 1, TS: ts(21), Kind: trace.KindAgentCallStart, CallID: "c1"}, &trace.AgentCallStart{Agent: "w", Verb: "decide", Prompt: "use " + tricky}},
		{trace.Event{Turn: 1, TS: ts(40), Kind: trace.KindAgentCallComplete, CallID: "c1"}, trace.AgentCallComplete{Agent: "w", Verb: "decide", DurationMS: 19,
			Response: map[string]any{"text": "the key is " + tricky}}},
		{trace.Event{Turn: 1, TS: ts(41), Kind: trace.KindHarnessReturned}, trace.HarnessReturned{Namespace: "host.agent.decide"}},
		{trace.Event{Turn: 1, TS: ts(70), Kind: trace.KindTurnEnd}, trace.TurnEnd{Outcome: "transitioned"}},
	}
	mem := keep{tracetest.NewInMemoryExporter()}
	e, err := New(context.Background(), Options{Exporter: mem, Content: true, Masker: secret.New([]string{tricky}), Session: Session{ID: "s", AppID: "app"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		e.Observe(&steps[i].ev, steps[i].p)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, s := range mem.GetSpans().Snapshots() {
		for _, kv := range s.Attributes() {
			all = append(all, kv.Value.String())
		}
	}
	text := strings.Join(all, "\n")
	for _, f := range secret.Forms(tricky) {
		if strings.Contains(text, f) {
			t.Errorf("a span shows the secret as %q:\n%s", f, text)
		}
	}
	if !strings.Contains(text, `the key is REDACTED`) {
		t.Errorf("the answer was not exported (or not masked):\n%s", text)
	}
}
