package testrunner

import (
	"bytes"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Story composition, flow by flow (testdata/compose, docs/stories.md
// "imports"): each story's flows run and pass, as they do in Kitsoki.
func TestComposeFlows(t *testing.T) {
	tests := []struct {
		name, app string
		flows     []string
	}{
		// A imports B imports C: C's exits reach A's states, through B's
		// exit and straight to A's state named in B's import of C.
		{"exits through a chain of imports", "chain/a/app.yaml", []string{"straight_to_importer.yaml", "through_exits.yaml"}},
		// An import re-entered starts from its private world's defaults.
		{"re-entry resets the private world", "reenter/app.yaml", []string{"second_visit_starts_afresh.yaml"}},
		// on_complete targets written as templates.
		{"on_complete target templates", "oncomplete/app.yaml", []string{"import_target_names_its_own_state.yaml", "import_target_stays.yaml", "root_target_template.yaml"}},
		// The other keys of imports.<alias>.
		{"every imports key", "keys/app.yaml", []string{"desk_exits.yaml", "desk_overrides_and_intents.yaml", "spare_and_lib.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := runFixtures(t, filepath.Join("testdata", "compose", tt.app), "")
			var ran []string
			for _, res := range rep.Results {
				ran = append(ran, filepath.Base(res.File))
				if !res.Passed {
					var b bytes.Buffer
					WriteResult(&b, res, true)
					t.Errorf("%s failed:\n%s", res.File, b.String())
				}
			}
			sort.Strings(ran)
			if diff := cmp.Diff(tt.flows, ran); diff != "" {
				t.Errorf("flows run (-want +got):\n%s", diff)
			}
		})
	}
}
