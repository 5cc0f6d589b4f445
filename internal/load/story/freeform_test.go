package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// armTargets is each arm's target ("." for a stay), in order.
func armTargets(arms []*Arm) []string {
	var out []string
	for _, a := range arms {
		if a.Stay {
			out = append(out, ".")
			continue
		}
		out = append(out, a.Target)
	}
	return out
}

// Without routing.free_form_fallback, landing's work arms are copied onto
// every state with no free-text sink (imports included, in their names),
// stay arms re-pointed at landing; an imported story with its own
// landing/work keeps its own.
func TestFreeFormFallbackLandingWork(t *testing.T) {
	s, err := Load("testdata/freeform/hub/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		state, intent string
		targets       []string // nil: the state takes no fallback
		fallback      string
		slot          string // "" for request
	}{
		{"menu", "work", []string{"menu", "landing"}, "landing", ""},
		{"pipe.idle", "work", []string{"menu", "landing"}, "landing", ""},
		{"pipe.busy", "work", []string{"menu", "landing"}, "landing", ""},
		{"kid.side", "kid__work", []string{"kid.landing"}, "kid.landing", ""},
		{"help.front", "help__ask", []string{"help.desk"}, "help.desk", "question"},
		{"help.desk", "help__ask", []string{"."}, "", ""}, // the intake keeps its own
		{"chat_room", "work", nil, "", ""},                // its own default_intent
		{"own_work", "work", []string{"menu"}, "", ""},
		{"done", "work", nil, "", ""}, // terminal
		{"split", "work", []string{"menu", "landing"}, "landing", ""},
		{"split.left", "work", nil, "", ""}, // inside a parallel state: the parallel state takes it
		{"split.left.a", "work", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.state, func(t *testing.T) {
			st := s.States[tt.state]
			if st == nil {
				t.Fatalf("no state %q", tt.state)
			}
			if d := cmp.Diff(tt.targets, armTargets(st.On[tt.intent])); d != "" {
				t.Errorf("on.%s targets (-want +got):\n%s", tt.intent, d)
			}
			if st.Fallback != tt.fallback {
				t.Errorf("Fallback = %q, want %q", st.Fallback, tt.fallback)
			}
			slot := tt.slot
			if slot == "" {
				slot = "request"
			}
			if tt.fallback != "" && (st.DefaultIntent != tt.intent || st.DefaultSlot != slot) {
				t.Errorf("default intent = %q/%q, want %s/%s", st.DefaultIntent, st.DefaultSlot, tt.intent, slot)
			}
		})
	}
	// The intake keeps its own arms, stay included.
	if d := cmp.Diff([]string{"menu", "."}, armTargets(s.States["landing"].On["work"])); d != "" {
		t.Errorf("landing on.work (-want +got):\n%s", d)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}
}

// routing.free_form_fallback names the intake; landing/work is then not
// used.
func TestFreeFormFallbackExplicit(t *testing.T) {
	s, err := Load("testdata/freeform/explicit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := &FreeFormFallback{State: "desk", Intent: "ask", Pos: Pos{File: "explicit.yaml", Line: 5, Col: 23}}
	if d := cmp.Diff(want, s.Routing.FreeFormFallback); d != "" {
		t.Errorf("FreeFormFallback (-want +got):\n%s", d)
	}
	l := s.States["landing"]
	if d := cmp.Diff([]string{"desk"}, armTargets(l.On["ask"])); d != "" {
		t.Errorf("landing on.ask (-want +got):\n%s", d)
	}
	if l.DefaultIntent != "ask" || l.DefaultSlot != "question" || l.Fallback != "desk" {
		t.Errorf("landing default intent = %q/%q from %q", l.DefaultIntent, l.DefaultSlot, l.Fallback)
	}
	if d := s.States["desk"]; d.Fallback != "" || d.DefaultIntent != "" {
		t.Errorf("desk took its own fallback: %q/%q", d.DefaultIntent, d.Fallback)
	}
}

func TestFreeFormFallbackErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"bad.yaml", `bad.yaml:3:23: routing.free_form_fallback.state: free_form_fallback state "dsk" is not a state of the story (did you mean "desk"?)`},
		{"bad_arms.yaml", `bad_arms.yaml:3:23: routing.free_form_fallback.intent: free_form_fallback intent "asks" has no on: arms in state "desk"; add on.asks there, or name an intent it handles (did you mean "ask"?)`},
		{"bad_intent.yaml", `bad_intent.yaml:3:23: routing.free_form_fallback.intent: free_form_fallback intent "pick": its required slot "n" is "int"; the utterance needs type: string`},
		{"missing.yaml", `missing.yaml:3:23: routing.free_form_fallback: intent: is required (the work-intake state and the intent, with one required string slot, that unclaimed free text goes to)`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := loadErr(t, "testdata/freeform/"+tt.file, nil)
			if d := cmp.Diff([]string{tt.want}, got); d != "" {
				t.Errorf("diagnostics (-want +got):\n%s", d)
			}
		})
	}
}
