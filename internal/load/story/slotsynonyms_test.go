package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadSlotSynonyms(t *testing.T) {
	s, err := Load("testdata/slotsynonyms/ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sl := s.Intents["go"].Slots["direction"]
	want := []SlotSynonym{
		{Value: "north", Phrase: "n", Words: []string{"n"}, Pos: Pos{File: "ok.yaml", Line: 11, Col: 19}},
		{Value: "north", Phrase: "up", Words: []string{"up"}, Pos: Pos{File: "ok.yaml", Line: 11, Col: 24}},
		{Value: "south", Phrase: "s", Words: []string{"s"}, Pos: Pos{File: "ok.yaml", Line: 12, Col: 19}},
		{Value: "south", Phrase: "down under", Words: []string{"down", "under"}, Pos: Pos{File: "ok.yaml", Line: 12, Col: 24}},
	}
	if d := cmp.Diff(want, sl.Synonyms); d != "" {
		t.Errorf("synonyms (-want +got):\n%s", d)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}
	for _, tc := range []struct {
		text string
		want any
		ok   bool
	}{
		{"north", "north", true},
		{"North", "north", true},
		{"up", "north", true},
		{"Down  Under", "south", true},
		{"west", nil, false},
		{"", nil, false},
	} {
		got, ok := sl.Canonical(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Canonical(%q) = %v, %v; want %v, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLoadSlotSynonymsErrors(t *testing.T) {
	got := loadErr(t, "testdata/slotsynonyms/bad.yaml", nil)
	want := []string{
		`bad.yaml:10:11: intents.go.slots.direction.synonyms.nrth: "nrth" is not one of the slot's values (north, south, east) (did you mean "north"?); synonyms are keyed by value`,
		`bad.yaml:11:24: intents.go.slots.direction.synonyms.south[1]: synonym is empty; write a phrase such as "up"`,
		`bad.yaml:11:28: intents.go.slots.direction.synonyms.south[2]: synonym "UP" stands for both "north" and "south"; a phrase may stand for one value only`,
		`bad.yaml:12:17: intents.go.slots.direction.synonyms.east: expected a list, got the scalar "right"`,
		`bad.yaml:15:19: intents.go.slots.name.synonyms: synonyms map an enum slot's values to phrases, and this slot declares no values: add values: [...] or remove synonyms`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
}

func TestSlotParseTiers(t *testing.T) {
	sl := &Slot{Name: "role", Type: "enum", Values: []any{"banker", "farmer", "sailor"}}
	sl.Synonyms = []SlotSynonym{
		{Value: "banker", Phrase: "rich guy", Words: []string{"rich", "guy"}},
		{Value: "banker", Phrase: "money man", Words: []string{"money", "man"}},
		{Value: "farmer", Phrase: "grower", Words: []string{"grower"}},
		{Value: "sailor", Phrase: "rich sailor", Words: []string{"rich", "sailor"}},
	}
	for _, tc := range []struct {
		text string
		want any
		ok   bool
	}{
		{"banker", "banker", true},                 // direct
		{"Money Man", "banker", true},              // synonym phrase
		{"the rich guy", "banker", true},           // word bag
		{"a farmer who sails", "farmer", true},     // word bag on the value
		{"bankr", "banker", true},                  // one deletion
		{"fraमer", nil, false},                     // two edits
		{"farmre", "farmer", true},                 // a transposition
		{"growr", "farmer", true},                  // a typo of a synonym
		{"rich", nil, false},                       // no phrase is all in it
		{"a rich sailor and a banker", nil, false}, // two values: none
		{"xyz", nil, false},
	} {
		got, ok := sl.Parse(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
	// Typed values get only the strict tiers.
	if _, ok := sl.Canonical("bankr"); ok {
		t.Error("Canonical accepted a typo")
	}
}
