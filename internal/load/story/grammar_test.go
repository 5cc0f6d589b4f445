package story

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGrammarSubsetCheckAtLoad(t *testing.T) {
	_, err := Load("testdata/grammar/app.yaml")
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load error = %v, want *LoadError", err)
	}
	var got []string
	for _, d := range le.Diagnostics {
		got = append(got, d.String())
	}
	want := []string{
		`app.yaml:12:41: states.s.on_enter[0].with.schema: agent_plugins.agent.local (grammar: true): schema schemas/wide.json: unanchored pattern "[a-z]+" at /properties/code/pattern is outside the llama.cpp grammar subset`,
		`app.yaml:12:41: states.s.on_enter[0].with.schema: agent_plugins.agent.local (grammar: true): schema schemas/wide.json: uniqueItems at /properties/tags/uniqueItems is outside the llama.cpp grammar subset`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
