package gotest

import (
	"testing"

	"github.com/kitsoki/kitsoki/kitsokitest"
)

// Every flow fixture of the hello story (stories/hello/flows/*.yaml), one
// subtest each, with the checks and messages of `kitsoki test flows`.
func TestHelloFlows(t *testing.T) {
	kitsokitest.RunFlows(t, helloApp)
}

// The same recorded run, through the test helper: Step fails the test on
// any rejection, fault, failed call or cassette miss.
func TestHelloReplayStep(t *testing.T) {
	s := kitsokitest.Replay(t, helloApp, demoTape)
	s.Step("greet name=Ada style=formal")
	s.Step("again")
	if out := s.Step("greet name=Grace"); out.View != "Grace was greeted (casual)." {
		t.Errorf("view = %q", out.View)
	}
}
