// Package otelexport turns a run's trace events into OpenTelemetry spans
// and sends them to an OTLP/HTTP endpoint: one span for the session, one
// per turn, one per invoke (host call) and one per agent call, the agent
// spans following the GenAI semantic conventions.
//
// It is a trace.Observer: the runtime hands it every event after the
// trace sink has written it, so the spans say exactly what the trace file
// says, with the trace's own timestamps (a run under a fake clock exports
// spans at the fake times). Prompts, answers and user input are exported
// only with Options.Content; every string exported goes through the
// story's secret masker first.
package otelexport

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/observe/usage"
)

// EnvEndpoint is the standard OpenTelemetry variable: a base URL to which
// the exporter adds /v1/traces.
const EnvEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"

// EnvTracesEndpoint is the standard per-signal variable: the full URL of
// the traces endpoint, used as is.
const EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"

// Options configures an Exporter. The zero value exports to the endpoint
// the standard OTEL_EXPORTER_OTLP_* variables name, without content.
type Options struct {
	// Endpoint is a base URL (http://127.0.0.1:4318); /v1/traces is added,
	// as for OTEL_EXPORTER_OTLP_ENDPOINT. Empty: the environment decides.
	Endpoint string
	// Content exports prompts, answers and the user's input lines.
	Content bool
	// Masker masks secret values in every exported string (nil: none).
	Masker *secret.Masker
	// Session names the session span's attributes.
	Session Session
	// Logger receives export failures (nil: slog.Default()).
	Logger *slog.Logger
	// Exporter replaces the OTLP/HTTP exporter (tests).
	Exporter sdktrace.SpanExporter
}

// Session is what the session span says about the run.
type Session struct {
	ID        string
	AppID     string
	StoryPath string
	Version   string
}

// Enabled reports whether an endpoint is configured: the flag's value or
// one of the standard variables (getenv is os.Getenv).
func Enabled(flag string, getenv func(string) string) bool {
	return flag != "" || getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
}

// Exporter is a trace.Observer exporting spans. Observe and Close are safe
// for concurrent use.
type Exporter struct {
	tp      *sdktrace.TracerProvider
	rec     *recording
	tracer  oteltrace.Tracer
	content bool
	mask    *secret.Masker
	logger  *slog.Logger

	info Session

	mu      sync.Mutex
	closed  bool
	session oteltrace.Span // nil until the first event
	sessCtx context.Context
	last    time.Time
	turn    *turnSpan
	ended   int64 // the last turn whose span ended
}

// turnSpan is the open turn and the calls open inside it.
type turnSpan struct {
	n       int64
	span    oteltrace.Span
	ctx     context.Context
	invokes []*invokeSpan     // open invokes, oldest first
	agents  map[string]openAt // open agent calls by call_id
	intent  string
}

type invokeSpan struct {
	handler string
	span    oteltrace.Span
	ctx     context.Context
}

type openAt struct {
	span oteltrace.Span
	ctx  context.Context
}

// New starts an exporter. The session span starts at the first event.
func New(ctx context.Context, o Options) (*Exporter, error) {
	exp := o.Exporter
	if exp == nil {
		// A collector that is down costs at most a few seconds at exit.
		opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(5 * time.Second),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 250 * time.Millisecond,
				MaxInterval: time.Second, MaxElapsedTime: 5 * time.Second})}
		if o.Endpoint != "" {
			u := strings.TrimRight(o.Endpoint, "/") + "/v1/traces"
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		}
		var err error
		if exp, err = otlptracehttp.New(ctx, opts...); err != nil {
			return nil, fmt.Errorf("otlp exporter: %w", err)
		}
	}
	res, err := resource.Merge(resource.Environment(), resource.NewSchemaless(
		attribute.String("service.name", "kitsoki"),
		attribute.String("service.version", o.Session.Version),
	))
	if err != nil {
		res = resource.NewSchemaless(attribute.String("service.name", "kitsoki"))
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	rec := &recording{SpanExporter: exp}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(rec), sdktrace.WithResource(res))
	e := &Exporter{tp: tp, rec: rec, tracer: tp.Tracer("github.com/kitsoki/kitsoki"), content: o.Content, mask: o.Masker, logger: logger, info: o.Session}
	e.sessCtx = context.Background()
	return e, nil
}

// str is a masked string attribute.
func (e *Exporter) str(k, v string) attribute.KeyValue {
	return attribute.String(k, e.mask.Text(v))
}

// Observe turns one written event into span starts and ends.
func (e *Exporter) Observe(ev *trace.Event, p trace.Payload) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	at, err := time.Parse(time.RFC3339Nano, ev.TS)
	if err != nil {
		at = time.Now()
	}
	e.last = at
	if e.session == nil {
		e.startSession(at)
	}
	switch p := deref(p).(type) {
	case trace.TurnStart:
		e.turnFor(ev, at) // turn.input, written first, may have opened it
	case trace.TurnInput:
		if t := e.turnFor(ev, at); t != nil && e.content {
			t.span.SetAttributes(e.str("kitsoki.turn.input", p.Input))
		}
	case trace.MachineIntentAccepted:
		if t := e.turnFor(ev, at); t != nil {
			t.intent = p.Intent
			t.span.SetAttributes(attribute.String("kitsoki.intent", p.Intent))
		}
	case trace.MachineValidationFailed:
		if t := e.turnFor(ev, at); t != nil {
			t.span.SetAttributes(attribute.String("kitsoki.rejection.code", p.Code))
		}
	case trace.MachineTransition:
		if t := e.turnFor(ev, at); t != nil && p.Intent != trace.SeedIntent {
			t.span.AddEvent("transition", oteltrace.WithTimestamp(at), oteltrace.WithAttributes(
				attribute.String("kitsoki.state.from", p.From), attribute.String("kitsoki.state.to", p.To),
				attribute.String("kitsoki.intent", p.Intent)))
		}
	case trace.MachineError:
		if t := e.turnFor(ev, at); t != nil {
			t.span.SetStatus(codes.Error, e.mask.Text(p.Error))
		}
	case trace.TurnEnd:
		e.endTurn(ev, p, at)
	case trace.HarnessDispatched:
		e.startInvoke(ev, p.Namespace, p.Background, at)
	case trace.HarnessReturned:
		e.endInvoke(ev, p.Namespace, p.Error, at)
	case trace.AgentCallStart:
		e.startAgent(ev, p, at)
	case trace.AgentCallComplete:
		e.endAgent(ev, at, func(s oteltrace.Span) {
			e.agentResult(s, p.Model, p.Meta, p.DurationMS)
			if e.content && p.Response != nil {
				s.SetAttributes(e.messages("gen_ai.output.messages", "assistant", p.Response))
			}
		})
	case trace.AgentCallError:
		e.endAgent(ev, at, func(s oteltrace.Span) {
			e.agentResult(s, p.Model, nil, p.DurationMS)
			s.SetAttributes(attribute.String("error.type", p.ErrorKind))
			s.SetStatus(codes.Error, e.mask.Text(p.Error))
		})
	case nil:
		e.subEvent(ev, at)
	}
}

// startSession opens the root span at the first event's time.
func (e *Exporter) startSession(at time.Time) {
	e.sessCtx, e.session = e.tracer.Start(context.Background(), "kitsoki.session", oteltrace.WithTimestamp(at),
		oteltrace.WithAttributes(
			e.str("kitsoki.session.id", e.info.ID),
			e.str("kitsoki.app.id", e.info.AppID),
			e.str("kitsoki.story.path", e.info.StoryPath),
			e.str("kitsoki.version", e.info.Version),
		))
}

// deref turns a pointer to a payload into the payload, so Observe sees one
// shape whichever the writer passed.
func deref(p trace.Payload) trace.Payload {
	switch q := p.(type) {
	case *trace.TurnStart:
		return *q
	case *trace.TurnInput:
		return *q
	case *trace.TurnEnd:
		return *q
	case *trace.MachineIntentAccepted:
		return *q
	case *trace.MachineValidationFailed:
		return *q
	case *trace.MachineTransition:
		return *q
	case *trace.MachineError:
		return *q
	case *trace.HarnessDispatched:
		return *q
	case *trace.HarnessReturned:
		return *q
	case *trace.AgentCallStart:
		return *q
	case *trace.AgentCallComplete:
		return *q
	case *trace.AgentCallError:
		return *q
	}
	return p
}

// turnFor is the open turn, opened on the fly for an event of a turn whose
// turn.start was not seen (turn 0's seed events have none: they stay on
// the session span).
func (e *Exporter) turnFor(ev *trace.Event, at time.Time) *turnSpan {
	if e.turn != nil && e.turn.n == ev.Turn {
		return e.turn
	}
	if ev.Turn == 0 || ev.Turn <= e.ended {
		// turn 0's seed events, and what a journal writes after a turn's
		// end (snapshots, decisions), stay on the session span
		return nil
	}
	e.startTurn(ev, at)
	return e.turn
}

func (e *Exporter) startTurn(ev *trace.Event, at time.Time) {
	if e.turn != nil {
		e.closeTurn(at)
	}
	ctx, span := e.tracer.Start(e.sessCtx, fmt.Sprintf("turn %d", ev.Turn), oteltrace.WithTimestamp(at),
		oteltrace.WithAttributes(attribute.Int64("kitsoki.turn", ev.Turn), attribute.String("kitsoki.state", ev.StatePath)))
	e.turn = &turnSpan{n: ev.Turn, span: span, ctx: ctx, agents: map[string]openAt{}}
}

func (e *Exporter) endTurn(ev *trace.Event, p trace.TurnEnd, at time.Time) {
	t := e.turnFor(ev, at)
	if t == nil {
		return
	}
	t.span.SetAttributes(attribute.String("kitsoki.turn.outcome", p.Outcome))
	if p.To != "" {
		t.span.SetAttributes(attribute.String("kitsoki.state.to", p.To))
	}
	switch p.Outcome {
	case "error":
		t.span.SetStatus(codes.Error, e.mask.Text(p.Error))
	case "rejected":
		t.span.SetAttributes(attribute.String("kitsoki.rejection.code", p.Code))
	}
	e.closeTurn(at)
}

// closeTurn ends the open turn and anything still open inside it.
func (e *Exporter) closeTurn(at time.Time) {
	t := e.turn
	for id, a := range t.agents {
		a.span.SetStatus(codes.Error, "no end event in the trace")
		a.span.End(oteltrace.WithTimestamp(at))
		delete(t.agents, id)
	}
	for i := len(t.invokes) - 1; i >= 0; i-- {
		t.invokes[i].span.SetStatus(codes.Error, "no end event in the trace")
		t.invokes[i].span.End(oteltrace.WithTimestamp(at))
	}
	t.span.End(oteltrace.WithTimestamp(at))
	e.turn, e.ended = nil, t.n
}

// parent is where a call of the current turn hangs: the newest open
// invoke, else the turn, else the session.
func (e *Exporter) parent(ev *trace.Event, at time.Time) context.Context {
	t := e.turnFor(ev, at)
	if t == nil {
		return e.sessCtx
	}
	if n := len(t.invokes); n > 0 {
		return t.invokes[n-1].ctx
	}
	return t.ctx
}

func (e *Exporter) startInvoke(ev *trace.Event, handler string, background bool, at time.Time) {
	ctx, span := e.tracer.Start(e.parent(ev, at), "invoke "+handler, oteltrace.WithTimestamp(at),
		oteltrace.WithAttributes(attribute.String("kitsoki.invoke.handler", handler),
			attribute.Bool("kitsoki.invoke.background", background), attribute.String("kitsoki.state", ev.StatePath)))
	if t := e.turnFor(ev, at); t != nil {
		t.invokes = append(t.invokes, &invokeSpan{handler: handler, span: span, ctx: ctx})
		return
	}
	span.End(oteltrace.WithTimestamp(at)) // outside a turn: nothing will end it
}

func (e *Exporter) endInvoke(ev *trace.Event, handler, errText string, at time.Time) {
	t := e.turnFor(ev, at)
	if t == nil {
		return
	}
	for i := len(t.invokes) - 1; i >= 0; i-- {
		in := t.invokes[i]
		if in.handler != handler {
			continue
		}
		if errText != "" {
			in.span.SetStatus(codes.Error, e.mask.Text(errText))
		}
		in.span.End(oteltrace.WithTimestamp(at))
		t.invokes = append(t.invokes[:i], t.invokes[i+1:]...)
		return
	}
}

func (e *Exporter) startAgent(ev *trace.Event, p trace.AgentCallStart, at time.Time) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", p.Agent),
		attribute.String("kitsoki.agent.verb", p.Verb),
		attribute.String("kitsoki.call_id", ev.CallID),
	}
	if p.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", p.Model))
	}
	if p.Profile != "" {
		attrs = append(attrs, attribute.String("kitsoki.agent.profile", p.Profile))
	}
	if p.Purpose != "" {
		attrs = append(attrs, attribute.String("kitsoki.agent.purpose", p.Purpose))
	}
	if e.content && p.Prompt != "" {
		attrs = append(attrs, e.messages("gen_ai.input.messages", "user", p.Prompt))
	}
	ctx, span := e.tracer.Start(e.parent(ev, at), "invoke_agent "+p.Agent, oteltrace.WithTimestamp(at),
		oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(attrs...))
	if t := e.turnFor(ev, at); t != nil && ev.CallID != "" {
		t.agents[ev.CallID] = openAt{span: span, ctx: ctx}
		return
	}
	span.End(oteltrace.WithTimestamp(at))
}

func (e *Exporter) endAgent(ev *trace.Event, at time.Time, fill func(oteltrace.Span)) {
	t := e.turnFor(ev, at)
	if t == nil {
		return
	}
	a, ok := t.agents[ev.CallID]
	if !ok {
		return
	}
	fill(a.span)
	a.span.End(oteltrace.WithTimestamp(at))
	delete(t.agents, ev.CallID)
}

// agentResult sets what the answer says: the model that answered, the
// provider (the transport's meta), tokens and cost.
func (e *Exporter) agentResult(s oteltrace.Span, model string, meta map[string]any, ms int64) {
	if m, _ := meta["model"].(string); m != "" && model == "" {
		model = m
	}
	if model != "" {
		s.SetAttributes(attribute.String("gen_ai.response.model", model))
	}
	s.SetAttributes(attribute.Int64("kitsoki.duration_ms", ms))
	if name := provider(meta); name != "" {
		s.SetAttributes(attribute.String("gen_ai.provider.name", name))
	}
	u := usage.FromMeta(meta)
	if u.HasTokens {
		s.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens))
	}
	if u.HasCost {
		s.SetAttributes(attribute.Float64("kitsoki.cost_usd", u.CostUSD))
	}
}

// provider names who answered: the meta's provider when the transport
// gives one, "anthropic" for the claude CLI, else the transport itself.
func provider(meta map[string]any) string {
	if p, _ := meta["provider"].(string); p != "" {
		return p
	}
	tr, _ := meta["transport"].(string)
	if tr == "claude_cli" || tr == "claude" {
		return "anthropic"
	}
	return tr
}

// messages is a gen_ai.{input,output}.messages attribute: one message
// with one text part, masked.
func (e *Exporter) messages(key, role string, content any) attribute.KeyValue {
	text, ok := content.(string)
	if !ok {
		b, err := json.Marshal(content)
		if err != nil {
			b = []byte(fmt.Sprint(content))
		}
		text = string(b)
	}
	msg := []map[string]any{{"role": role, "parts": []map[string]any{{"type": "text", "content": e.mask.Text(text)}}}}
	b, _ := json.Marshal(msg)
	return attribute.String(key, string(b))
}

// subEvent records an open-payload event (a plugin's sub-event) on the
// agent call it belongs to, or the turn.
func (e *Exporter) subEvent(ev *trace.Event, at time.Time) {
	t := e.turnFor(ev, at)
	if t == nil {
		return
	}
	target := t.span
	if a, ok := t.agents[ev.CallID]; ok {
		target = a.span
	}
	target.AddEvent(ev.Kind, oteltrace.WithTimestamp(at))
}

// Close ends whatever is open at the last event's time, ends the session
// span and flushes the spans to the endpoint. An export failure is
// returned (the caller shows it; it does not change the run's outcome).
func (e *Exporter) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	at := e.last
	if at.IsZero() {
		at = time.Now()
	}
	if e.turn != nil {
		e.closeTurn(at)
	}
	if e.session != nil {
		e.session.End(oteltrace.WithTimestamp(at))
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlp export: %w", err)
	}
	if err := e.rec.failed(); err != nil {
		return fmt.Errorf("otlp export: %w", err)
	}
	return nil
}

// recording keeps the first export failure for Close to report, and
// answers the batcher nil, so the SDK's process-wide error handler (which
// writes to the standard logger, past slog and the masked stderr) never
// sees it.
type recording struct {
	sdktrace.SpanExporter
	mu    sync.Mutex
	err   error
	spans int // spans lost to failed exports
}

func (r *recording) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := r.SpanExporter.ExportSpans(ctx, spans); err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.spans += len(spans)
		r.mu.Unlock()
	}
	return nil
}

func (r *recording) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return nil
	}
	return fmt.Errorf("%d span(s) not exported: %w", r.spans, r.err)
}
