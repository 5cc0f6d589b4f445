package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadRouting(t *testing.T) {
	s, err := Load("testdata/routing/ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Routing.Enabled == nil || !*s.Routing.Enabled || s.Routing.Agent != "agent.router" ||
		s.Routing.MinConfidence == nil || *s.Routing.MinConfidence != 0.7 {
		t.Errorf("routing = %+v", s.Routing)
	}
	syn := s.Intents["forecast"].Synonyms
	want := []Synonym{
		{Text: "weather in {city}", Parts: []SynonymPart{{Word: "weather"}, {Word: "in"}, {Slot: "city"}}, Pos: Pos{File: "ok.yaml", Line: 12, Col: 16}},
		{Text: "what's it like", Pos: Pos{File: "ok.yaml", Line: 12, Col: 37}},
	}
	if d := cmp.Diff(want, syn); d != "" {
		t.Errorf("synonyms (-want +got):\n%s", d)
	}
	if st := s.States["lobby"]; st.DefaultIntent != "chat" || st.DefaultSlot != "message" {
		t.Errorf("default intent = %q/%q", st.DefaultIntent, st.DefaultSlot)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}
}

func TestLoadRoutingErrors(t *testing.T) {
	got := loadErr(t, "testdata/routing/bad.yaml", nil)
	want := []string{
		`bad.yaml:3:12: routing.enabled: expected true or false, got the scalar "yes please"`,
		`bad.yaml:4:10: routing.agent: routing.agent "agent.roter" is not declared in agent_plugins (did you mean "agent.router"?) (declared: agent.claude, agent.router)`,
		`bad.yaml:5:19: routing.min_confidence: min_confidence must be from 0 to 1, got 2`,
		`bad.yaml:6:14: routing.cache_cap: expected an integer, got the scalar "lots"`,
		`bad.yaml:11:16: intents.forecast.synonyms[0]: synonym captures {town}, which is not a slot of intent "forecast"; declared slots: city, day`,
		`bad.yaml:11:37: intents.forecast.synonyms[1]: synonym "{city}{day}": captures {city} and {day} are adjacent; put a word between them`,
		`bad.yaml:11:52: intents.forecast.synonyms[2]: synonym "for {city": unterminated "{"; a capture is written {slot_name}`,
		`bad.yaml:11:65: intents.forecast.synonyms[3]: synonym is empty; write a phrase such as "head out" or a template such as "go {direction}"`,
		`bad.yaml:21:21: states.lobby.default_intent: default_intent "pick": its required slot "n" is "int"; the utterance needs type: string`,
		`bad.yaml:26:21: states.other.default_intent: default_intent "forecast" has no on: arms in state "other" or its ancestors; add on.forecast, or name an intent the state handles`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
