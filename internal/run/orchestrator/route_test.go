package orchestrator

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const routeStory = `
app: {id: weather}
routing: {agent: agent.router}
agent_plugins: {agent.router: {plugin: builtin.inprocess}}
intents:
  forecast:
    title: Show the forecast
    description: Show the weather forecast for a city.
    examples: ["what's the weather", "weather please"]
    synonyms: ["forecast for {city}", "sunny"]
    slots:
      city: {type: string, required: true, description: the city}
      days: {type: int}
  units:
    description: Switch units.
    examples: ["weather please"]
    synonyms: ["celsius"]
    slots:
      system: {type: enum, values: [metric, imperial], required: true}
  secret: {hidden: true}
  chat:
    slots:
      message: {type: string, required: true}
  quit: {title: Leave, synonyms: ["goodbye"]}
root: desk
states:
  desk:
    description: The weather desk.
    on:
      forecast: [{target: shown}]
      units: [{target: .}]
      secret: [{target: .}]
      quit: [{target: bye}]
  shown:
    default_intent: chat
    view: "Forecast for {{ world.city }}"
    on_enter:
      - set: {city: "{{ slots.city }}"}
    on:
      chat: [{target: ., effects: [{say: "you said {{ slots.message }}"}]}]
      quit: [{target: bye}]
  bye: {terminal: true}
world:
  city: {type: string, default: ""}
`

// routerAgent answers every route with the given submission and records
// the calls it got.
type routerAgent struct {
	mu    sync.Mutex
	sub   string
	calls []*agent.Call
}

func (a *routerAgent) Ask(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, c)
	return &agent.AskResponse{Submission: json.RawMessage(a.sub)}, nil
}
func (a *routerAgent) Close() error { return nil }

func TestFreeTextDetection(t *testing.T) {
	r := newRig(t, files{"app.yaml": routeStory})
	tests := []struct {
		line string
		free bool
	}{
		{"forecast city=Tokyo", false},
		{"forecast", false},
		{"gret name=x", false}, // typed: UNKNOWN_INTENT with a suggestion
		{"show me the forecast for Tokyo", true},
		{"what's the weather", true}, // an apostrophe is no quote
		{"forecast for Tokyo", true},
		{"hello", true}, // a lone word that is no intent
		{"quit now", true},
	}
	for _, tt := range tests {
		if got := r.sess.IsFreeText(tt.line); got != tt.free {
			t.Errorf("IsFreeText(%q) = %v, want %v", tt.line, got, tt.free)
		}
	}
}

func TestRouteTiers(t *testing.T) {
	on, off := true, false
	tests := []struct {
		name     string
		semantic *bool
		state    string
		text     string
		want     Route
		ok       bool
	}{
		{"exact name", nil, "desk", "Forecast", Route{Tier: TierExact, Intent: "forecast", Confidence: 1, Slots: map[string]any{}}, true},
		{"exact title", nil, "desk", "show the FORECAST!", Route{Tier: TierExact, Intent: "forecast", Confidence: 1, Slots: map[string]any{}}, true},
		{"an example leaving a required slot unfilled is no exact match", nil, "desk", "What's the weather?", Route{}, false},
		{"exact title in another state", nil, "shown", "Leave", Route{Tier: TierExact, Intent: "quit", Confidence: 1, Slots: map[string]any{}}, true},
		{"shared example is no exact match", nil, "desk", "weather please", Route{}, false},
		{"hidden intent is not routed", nil, "desk", "secret", Route{}, false},
		{"synonyms off by default", nil, "desk", "it looks sunny today", Route{}, false},
		{"synonym", &on, "desk", "goodbye everyone", Route{Tier: TierSynonym, Intent: "quit", Confidence: 0.9, Slots: map[string]any{}}, true},
		{"synonym leaves a required slot to the router", &on, "desk", "it looks sunny today", Route{}, false},
		{"synonym forced off", &off, "desk", "goodbye everyone", Route{}, false},
		{"verb value of a text slot", nil, "shown", "chat about rain", Route{Tier: TierVerbValue, Intent: "chat", Confidence: 1, Slots: map[string]any{"message": "about rain"}}, true},
		{"a text slot with templates is left to them", nil, "desk", "forecast Tokyo", Route{}, false},
		{"verb value of an enum slot", nil, "desk", "units imperial", Route{Tier: TierVerbValue, Intent: "units", Confidence: 1, Slots: map[string]any{"system": "imperial"}}, true},
		{"a lone enum value", nil, "desk", "metric", Route{Tier: TierVerbValue, Intent: "units", Confidence: 1, Slots: map[string]any{"system": "metric"}}, true},
		{"verb with no value is no verb value", nil, "desk", "units please now", Route{}, false},
		{"template", &on, "desk", "forecast for New York", Route{Tier: TierTemplate, Intent: "forecast", Confidence: 0.8, Slots: map[string]any{"city": "new york"}}, true},
		{"default intent", nil, "shown", "tell me more about rain", Route{Tier: TierDefaultIntent, Intent: "chat", Confidence: 1, Slots: map[string]any{"message": "tell me more about rain"}}, true},
		{"exact beats default intent", nil, "shown", "leave", Route{Tier: TierExact, Intent: "quit", Confidence: 1, Slots: map[string]any{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": routeStory}, withRoot(tt.state), func(c *rigConfig) { c.routing.Semantic = tt.semantic })
			got, ok := r.sess.Resolve(tt.text)
			if ok != tt.ok {
				t.Fatalf("Resolve(%q) ok = %v, want %v (%+v)", tt.text, ok, tt.ok, got)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tt.text, d)
			}
		})
	}
}

func TestStoryRoutingEnabled(t *testing.T) {
	src := strings.Replace(routeStory, "routing: {agent: agent.router}", "routing: {agent: agent.router, enabled: true}", 1)
	r := newRig(t, files{"app.yaml": src})
	if got, ok := r.sess.Resolve("goodbye"); !ok || got.Tier != TierSynonym {
		t.Errorf("routing.enabled: true: Resolve = %+v, %v; want the synonym tier", got, ok)
	}
	off := false
	r = newRig(t, files{"app.yaml": src}, func(c *rigConfig) { c.routing.Semantic = &off })
	if _, ok := r.sess.Resolve("goodbye"); ok {
		t.Errorf("--semantic-routing=false must win over routing.enabled")
	}
}

func TestRouterSchemaListsTheAllowedIntents(t *testing.T) {
	for _, tt := range []struct {
		state string
		want  []string
	}{
		{"desk", []string{"forecast", "none", "quit", "units"}}, // secret is hidden
		{"shown", []string{"chat", "none", "quit"}},
	} {
		r := newRig(t, files{"app.yaml": routeStory}, withRoot(tt.state))
		raw, err := r.sess.RouterSchema()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			AnyOf []struct {
				Properties struct {
					Intent struct{ Enum []string }
					Slots  struct {
						Properties map[string]map[string]any
					}
				}
			}
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range doc.AnyOf {
			got = append(got, b.Properties.Intent.Enum...)
			if slices.Contains(b.Properties.Intent.Enum, "units") {
				if d := cmp.Diff(map[string]any{"enum": []any{"metric", "imperial"}}, b.Properties.Slots.Properties["system"]); d != "" {
					t.Errorf("units.system slot schema (-want +got):\n%s", d)
				}
			}
			if slices.Contains(b.Properties.Intent.Enum, "forecast") {
				if typ := b.Properties.Slots.Properties["days"]["type"]; typ != "integer" {
					t.Errorf("forecast.days type = %v, want integer", typ)
				}
			}
		}
		sort.Strings(got)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("state %s: router schema intents (-want +got):\n%s", tt.state, d)
		}
	}
}

func TestRouterRoutesFreeText(t *testing.T) {
	ra := &routerAgent{sub: `{"intent":"forecast","slots":{"city":"Tokyo","days":3},"confidence":0.92}`}
	r := newRig(t, files{"app.yaml": routeStory}, withAgent("agent.router", ra))
	out, err := r.sess.Say(context.Background(), "show me the forecast for Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != OutcomeTransitioned || out.State != "shown" || out.View != "Forecast for Tokyo" {
		t.Fatalf("outcome = %+v", out)
	}
	if len(ra.calls) != 1 {
		t.Fatalf("router asked %d times", len(ra.calls))
	}
	c := ra.calls[0]
	if c.Request.Verb != "decide" || !strings.Contains(c.Request.Prompt, "- forecast: Show the weather forecast for a city.") ||
		!strings.Contains(c.Request.Prompt, `examples: "what's the weather", "weather please"`) ||
		!strings.HasSuffix(c.Request.Prompt, "User: show me the forecast for Tokyo\n") {
		t.Errorf("router request: verb %q prompt:\n%s", c.Request.Verb, c.Request.Prompt)
	}
	if len(c.Request.Schema) == 0 {
		t.Error("router request carries no schema")
	}
	var start trace.AgentCallStart
	evs := r.events(trace.KindAgentCallStart)
	if len(evs) != 1 {
		t.Fatalf("%d agent.call.start events", len(evs))
	}
	if err := trace.Decode(&evs[0], &start); err != nil {
		t.Fatal(err)
	}
	if start.Purpose != "route" || start.Verb != "decide" {
		t.Errorf("agent.call.start = %+v", start)
	}
	var routed trace.TurnRouted
	evs = r.events(trace.KindTurnRouted)
	if len(evs) != 1 {
		t.Fatalf("%d turn.routed events", len(evs))
	}
	if err := trace.Decode(&evs[0], &routed); err != nil {
		t.Fatal(err)
	}
	want := trace.TurnRouted{Tier: "router", Input: "show me the forecast for Tokyo", Intent: "forecast",
		Slots: map[string]any{"city": "Tokyo", "days": json.Number("3")}, Confidence: 0.92}
	if d := cmp.Diff(want, routed); d != "" {
		t.Errorf("turn.routed (-want +got):\n%s", d)
	}
	if got, want := r.kinds(1)[:3], []string{trace.KindTurnInput, trace.KindTurnStart, trace.KindAgentCallStart}; !slices.Equal(got, want) {
		t.Errorf("turn 1 starts %v, want %v", got, want)
	}
}

func TestRouterAnswersAreValidated(t *testing.T) {
	tests := []struct {
		name, sub, code, msg string
	}{
		{"low confidence", `{"intent":"forecast","slots":{"city":"Oslo"},"confidence":0.3}`, CodeNoMatch,
			`not sure what "blah blah" means here (maybe forecast, confidence 0.30 < 0.50); rephrase, or type one of: forecast, quit, units`},
		{"none", `{"intent":"none","confidence":0.9}`, CodeNoMatch,
			`could not tell what "blah blah" means here; rephrase, or type one of: forecast, quit, units`},
		{"missing slot", `{"intent":"forecast","slots":{},"confidence":0.9}`, CodeMissingSlots,
			`intent "forecast" is missing required slots: city`},
		{"schema violation", `{"intent":"units","slots":{"system":"kelvin"},"confidence":0.9}`, CodeRouterFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": routeStory}, withAgent("agent.router", &routerAgent{sub: tt.sub}))
			out, err := r.sess.Say(context.Background(), "blah blah")
			if err != nil {
				t.Fatal(err)
			}
			if out.Outcome != OutcomeRejected || out.Rejection.Code != tt.code || out.State != "desk" {
				t.Fatalf("outcome %+v rejection %+v", out, out.Rejection)
			}
			if tt.msg != "" && out.Rejection.Message != tt.msg {
				t.Errorf("message = %q, want %q", out.Rejection.Message, tt.msg)
			}
			if tt.code == CodeRouterFailed {
				if len(out.HostErrors) != 1 || !strings.Contains(out.HostErrors[0].Error(), "schema_invalid") {
					t.Errorf("host errors = %v, want the router's schema_invalid", out.HostErrors)
				}
			}
		})
	}
}

func TestMinConfidence(t *testing.T) {
	sub := `{"intent":"quit","confidence":0.6}`
	for _, tt := range []struct {
		name string
		cfg  RoutingConfig
		src  string
		want string
	}{
		{"default 0.5", RoutingConfig{}, routeStory, OutcomeTransitioned},
		{"story 0.7", RoutingConfig{}, strings.Replace(routeStory, "routing: {agent: agent.router}", "routing: {agent: agent.router, min_confidence: 0.7}", 1), OutcomeRejected},
		{"flag wins", RoutingConfig{MinConfidence: new(0.55)}, strings.Replace(routeStory, "routing: {agent: agent.router}", "routing: {agent: agent.router, min_confidence: 0.7}", 1), OutcomeTransitioned},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": tt.src}, withAgent("agent.router", &routerAgent{sub: sub}), func(c *rigConfig) { c.routing = tt.cfg })
			out, err := r.sess.Say(context.Background(), "i am off")
			if err != nil {
				t.Fatal(err)
			}
			if out.Outcome != tt.want {
				t.Errorf("outcome = %s (%v), want %s", out.Outcome, out.Rejection, tt.want)
			}
		})
	}
}

// BenchmarkRouteExactMatch is the cost of the exact tier, which runs on
// every free-text turn (an intent's title; an example of an intent with a
// required slot it leaves unnamed is no exact match).
func BenchmarkRouteExactMatch(b *testing.B) {
	r := benchRouteRig(b, nil)
	for b.Loop() {
		if _, ok := r.Resolve("Show the forecast!"); !ok {
			b.Fatal("no match")
		}
	}
}

// BenchmarkRouteSynonym is the cost of a synonym hit (exact tried first).
func BenchmarkRouteSynonym(b *testing.B) {
	on := true
	r := benchRouteRig(b, &on)
	for b.Loop() {
		if got, ok := r.Resolve("well goodbye then"); !ok || got.Tier != TierSynonym {
			b.Fatal("no synonym match")
		}
	}
}

func benchRouteRig(b *testing.B, semantic *bool) *Session {
	b.Helper()
	st, err := story.Load(writeStory(b, files{"app.yaml": routeStory}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	sink := trace.NewMemSink()
	s, err := New(st, nil, sink, WithRouting(RoutingConfig{Semantic: semantic}))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

// TestRouterSchemaCompiledOncePerState: the router schema of a state is
// compiled the first time the router is asked there and reused after, and
// the answers are still validated against it.
func TestRouterSchemaCompiledOncePerState(t *testing.T) {
	ra := &routerAgent{sub: `{"intent":"none","confidence":0.9}`}
	r := newRig(t, files{"app.yaml": routeStory}, withAgent("agent.router", ra))
	for range 3 {
		out, err := r.sess.Say(context.Background(), "blah blah")
		if err != nil {
			t.Fatal(err)
		}
		if out.Outcome != OutcomeRejected || out.Rejection.Code != CodeNoMatch {
			t.Fatalf("outcome %+v rejection %+v", out, out.Rejection)
		}
	}
	if n := len(r.sess.routerSchemas); n != 1 {
		t.Errorf("%d router schemas compiled for three routes in one state, want 1", n)
	}
	ra.mu.Lock()
	ra.sub = `{"intent":"units","slots":{"system":"kelvin"},"confidence":0.9}`
	ra.mu.Unlock()
	out, err := r.sess.Say(context.Background(), "blah blah")
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != OutcomeRejected || out.Rejection.Code != CodeRouterFailed {
		t.Errorf("an answer the reused schema rejects: outcome %+v rejection %+v, want %s", out, out.Rejection, CodeRouterFailed)
	}
	if len(ra.calls) != 4 {
		t.Errorf("router asked %d times, want 4", len(ra.calls))
	}
}
