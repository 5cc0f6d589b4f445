package schema

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGrammarSubsetViolations(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"testdata/judge_verdict.json", nil},
		{"testdata/outside_subset.json", []string{
			"$defs at /$defs",
			"definitions at /definitions",
			"dependentSchemas at /properties/a~1b/dependentSchemas",
			"oneOf beside properties at /properties/kind/oneOf",
			"not at /properties/kind/oneOf/1/not",
			"if at /properties/mode/if",
			"then at /properties/mode/then",
			"else at /properties/mode/else",
			"contains at /properties/tags/contains",
			"uniqueItems at /properties/tags/uniqueItems",
			"$ref at /properties/who/$ref",
			`unanchored pattern "[a-z]+" at /$defs/name/pattern`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			doc, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := GrammarSubsetViolations(doc)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.String())
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("violations (-want +got):\n%s", d)
			}
		})
	}
}

func TestGrammarSubsetSmallCases(t *testing.T) {
	tests := []struct {
		doc  string
		want []string
	}{
		{`true`, nil},
		{`{"type":"string","pattern":"^a$"}`, nil},
		{`{"type":"string","pattern":"^a"}`, []string{`unanchored pattern "^a" at /pattern`}},
		{`{"anyOf":[{"type":"string"}],"type":"string"}`, []string{"anyOf beside type at /anyOf"}},
		{`{"type":"array","prefixItems":[{"not":{}}],"items":{"$ref":"#"}}`, []string{"$ref at /items/$ref", "not at /prefixItems/0/not"}},
		{`{"enum":[{"not":1}],"const":{"$ref":"x"}}`, nil}, // values, not schemas
	}
	for _, tc := range tests {
		vs, err := GrammarSubsetViolations([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range vs {
			got = append(got, v.String())
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.doc, d)
		}
	}
	if _, err := GrammarSubsetViolations([]byte(`{`)); err == nil || err.Error() != "schema is not valid JSON: unexpected end of JSON input" {
		t.Errorf("invalid JSON: err = %v", err)
	}
}

func TestFormatViolation(t *testing.T) {
	got := FormatViolation("agent.local", "schemas/verdict.json", Violation{Construct: "uniqueItems", Pointer: "/properties/tags/uniqueItems"})
	want := "agent_plugins.agent.local (grammar: true): schema schemas/verdict.json: uniqueItems at /properties/tags/uniqueItems is outside the llama.cpp grammar subset"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
