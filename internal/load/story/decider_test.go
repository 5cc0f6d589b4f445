package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decider: needs a judge from agents: and a decision schema; its threshold
// is a confidence and its prompt a file.
func TestDeciderErrors(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string
	}{
		{"bad.yaml", []string{
			`bad.yaml:3:1: decider.schema: decider: needs schema: (the decision schema the judge submits: intent, confidence, reason)`,
			`bad.yaml:3:18: decider.agent: agent "juge" is not declared in agents: (did you mean "judge"?)`,
			`bad.yaml:3:35: decider.threshold: threshold is a confidence between 0 and 1, got 1.5`,
			`bad.yaml:3:48: decider.prompt: cannot read prompt file "missing.md": no such file or directory`,
		}},
		{"noagent.yaml", []string{
			`noagent.yaml:2:1: decider.agent: decider: needs agent: (the judge, a persona from agents:)`,
			`noagent.yaml:2:19: decider.schema: schema "d.json": no such file or directory`,
		}},
	} {
		if d := cmp.Diff(tt.want, loadErr(t, "testdata/decider/"+tt.file, nil)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.file, d)
		}
	}
}
