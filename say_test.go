package kitsoki_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/plugin"
)

const weatherApp = "testdata/weather/app.yaml"

// router answers every route request with sub, and counts the calls.
func router(sub string, calls *int) kitsoki.AgentFunc {
	return func(_ context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
		*calls++
		if req.Verb != plugin.VerbDecide {
			return nil, errors.New("the router is asked with decide")
		}
		return &kitsoki.AskResponse{Submission: []byte(sub)}, nil
	}
}

func TestSayRoutesFreeText(t *testing.T) {
	tests := []struct {
		name   string
		opts   []kitsoki.Option
		sub    string
		text   string
		route  kitsoki.Route
		view   string
		routed int // router calls
	}{
		{"exact example", nil, `{"intent":"none","confidence":1}`, "What's the weather?",
			kitsoki.Route{Tier: "exact", Intent: "forecast", Slots: map[string]any{}, Confidence: 1}, "Forecast for Lisbon: sunny", 0},
		{"template with semantic routing", []kitsoki.Option{kitsoki.WithSemanticRouting(true)}, `{"intent":"none","confidence":1}`, "forecast for Tokyo",
			kitsoki.Route{Tier: "template", Intent: "forecast", Slots: map[string]any{"city": "tokyo"}, Confidence: 0.8}, "Forecast for tokyo: sunny", 0},
		{"router", nil, `{"intent":"forecast","slots":{"city":"Tokyo"},"confidence":0.9}`, "show me the forecast for Tokyo",
			kitsoki.Route{Tier: "router", Intent: "forecast", Slots: map[string]any{"city": "Tokyo"}, Confidence: 0.9}, "Forecast for Tokyo: sunny", 1},
		{"router under a lower bar", []kitsoki.Option{kitsoki.WithMinConfidence(0.2)}, `{"intent":"forecast","slots":{"city":"Oslo"},"confidence":0.3}`, "Oslo maybe",
			kitsoki.Route{Tier: "router", Intent: "forecast", Slots: map[string]any{"city": "Oslo"}, Confidence: 0.3}, "Forecast for Oslo: sunny", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			s, _ := open(t, weatherApp, append([]kitsoki.Option{kitsoki.WithAgent("agent.router", router(tt.sub, &calls))}, tt.opts...)...)
			out, err := s.Say(t.Context(), tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(&tt.route, out.Route); d != "" {
				t.Errorf("route (-want +got):\n%s", d)
			}
			if out.State != "shown" || out.View != tt.view {
				t.Errorf("state %q view %q, want shown %q", out.State, out.View, tt.view)
			}
			if calls != tt.routed {
				t.Errorf("router asked %d time(s), want %d", calls, tt.routed)
			}
		})
	}
}

func TestSayThenDo(t *testing.T) {
	calls := 0
	s, _ := open(t, weatherApp, kitsoki.WithAgent("agent.router", router(`{"intent":"forecast","slots":{"city":"Tokyo"},"confidence":0.9}`, &calls)))
	out, err := s.Say(t.Context(), "show me the forecast for Tokyo")
	if err != nil || out.Route == nil || out.Route.Tier != "router" || out.State != "shown" {
		t.Fatalf("Say: %v, route %+v, state %q", err, out.Route, out.State)
	}
	out, err = s.Say(t.Context(), "it looks like rain") // the state's default_intent
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"(noted: it looks like rain)"}, out.Says); d != "" || out.Route.Tier != "default_intent" {
		t.Errorf("default_intent: route %+v, says (-want +got):\n%s", out.Route, d)
	}
	if out := do(t, s, "quit"); out.Route != nil || !out.Done {
		t.Errorf("a typed intent: route %+v, done %v", out.Route, out.Done)
	}
	if calls != 1 {
		t.Errorf("router asked %d times, want 1", calls)
	}
}

func TestSayRejections(t *testing.T) {
	tests := []struct {
		name, sub, text, code, msg string
		fail                       bool
	}{
		{"low confidence", `{"intent":"quit","confidence":0.2}`, "maybe later", kitsoki.CodeNoMatch,
			`NO_MATCH: not sure what "maybe later" means here (maybe quit, confidence 0.20 < 0.50); rephrase, or type one of: forecast, quit`, false},
		{"none", `{"intent":"none","confidence":0.9}`, "xyzzy", kitsoki.CodeNoMatch,
			`NO_MATCH: could not tell what "xyzzy" means here; rephrase, or type one of: forecast, quit`, false},
		{"router failed", `not json`, "hello there", kitsoki.CodeRouterFailed, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			s, _ := open(t, weatherApp, kitsoki.WithAgent("agent.router", router(tt.sub, &calls)))
			out, err := s.Say(t.Context(), tt.text)
			var rej *kitsoki.Rejection
			if !errors.As(err, &rej) || rej.Code != tt.code {
				t.Fatalf("error %v, want a %s rejection", err, tt.code)
			}
			if tt.msg != "" && rej.Error() != tt.msg {
				t.Errorf("rejection:\n%s\nwant:\n%s", rej.Error(), tt.msg)
			}
			var ce *kitsoki.CallError
			if got := errors.As(err, &ce); got != tt.fail {
				t.Errorf("a *CallError in the error: %v, want %v (%v)", got, tt.fail, err)
			}
			if out == nil || out.State != "desk" || out.Route == nil || out.Route.Intent != "" || out.Route.Tier != "router" {
				t.Errorf("outcome %+v", out)
			}
		})
	}
}

func TestSayNeedsStartAndRoutingOptionsAreChecked(t *testing.T) {
	s, err := kitsoki.Open(weatherApp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Say(t.Context(), "hello"); err == nil || err.Error() != "kitsoki: session not started: call Start first" {
		t.Errorf("Say before Start: %v", err)
	}
	for _, tc := range []struct {
		opt  kitsoki.Option
		want string
	}{
		{kitsoki.WithRouter("agent.nope"), `kitsoki.WithRouter("agent.nope"): "agent.nope" is not declared under agent_plugins: in `},
		{kitsoki.WithMinConfidence(1.5), `kitsoki.WithMinConfidence(1.5): the bar must be from 0 to 1`},
	} {
		s, err := kitsoki.Open(weatherApp, tc.opt)
		if err == nil {
			s.Close()
			t.Fatalf("Open succeeded, want %q", tc.want)
		}
		if got := err.Error(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("error %q, want it to start %q", got, tc.want)
		}
	}
}
