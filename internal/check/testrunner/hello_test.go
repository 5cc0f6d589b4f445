package testrunner

import (
	"context"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const helloApp = "../../../stories/hello/app.yaml"

// The bundled story's flows pass on the Runner, as `kitsoki test flows`
// runs them (the go test form is kitsokitest.RunFlows).
func TestHelloFlows(t *testing.T) {
	fxs, err := LoadFixtures(helloApp, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(fxs) == 0 {
		t.Fatal("the hello story has no flow fixtures")
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	t.Cleanup(func() { r.Close() })
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed != len(fxs) {
		t.Errorf("passed %d of %d:\n%s", rep.Passed, len(fxs), report(rep.Results, true))
	}
}
