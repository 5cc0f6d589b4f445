package kitsokiformat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/check/testrunner"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// TestFormatFlows runs every conformance story's flows: testdata/<feature>/
// holds app.yaml and flows/*.yaml, and every flow must pass.
func TestFormatFlows(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		name := d.Name()
		t.Run(name, func(t *testing.T) {
			app := filepath.Join("testdata", name, "app.yaml")
			fxs, err := testrunner.LoadFixtures(app, filepath.Join("testdata", name, "flows", "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if len(fxs) == 0 {
				t.Fatalf("%s has no flows", name)
			}
			r := testrunner.NewRunner(testrunner.WithFlowGetenv(testkit.NoEnv))
			t.Cleanup(func() { r.Close() })
			rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range rep.Results {
				if !res.Passed {
					t.Errorf("%s failed:%s", res.Name, failures(res))
				}
			}
		})
	}
}

// failures lists why a flow failed, turn by turn.
func failures(res *testrunner.FlowResult) string {
	var b strings.Builder
	if res.SetupError != "" {
		b.WriteString("\n  setup: " + res.SetupError)
	}
	for _, tr := range res.Turns {
		for _, f := range tr.Failures {
			fmt.Fprintf(&b, "\n  turn %d (state %s): %s", tr.TurnIndex, tr.NewState, f)
		}
		if !tr.Passed && tr.View != "" {
			fmt.Fprintf(&b, "\n  view:\n%s", tr.View)
		}
	}
	return b.String()
}
