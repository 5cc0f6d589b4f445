package testrunner

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/trace"
)

const helloApp = "../../stories/hello/app.yaml"

// The bundled story's flows run under go test, one subtest per fixture.
func TestHelloFlows(t *testing.T) {
	RunFlows(t, helloApp, WithFlowGetenv(noEnv))
}

// RunFlow runs one file's fixtures.
func TestHelloRunFlow(t *testing.T) {
	RunFlow(t, helloApp, "../../stories/hello/flows/happy_path.yaml", WithFlowGetenv(noEnv))
}

// Replay drives the story from its recorded cassette in a few lines.
func TestHelloReplay(t *testing.T) {
	s := Replay(t, helloApp, "../../stories/hello/cassettes/demo.yaml")
	if out := s.Do("greet name=Ada style=formal"); out.View != "Ada was greeted (formal)." {
		t.Errorf("view %q", out.View)
	}
	s.Do("again")
	if out := s.Do("greet name=Grace"); out.View != "Grace was greeted (casual)." {
		t.Errorf("view %q", out.View)
	}
	if out := s.Do("bye"); !out.Done {
		t.Errorf("not done: %+v", out)
	}
	var eps []string
	for _, ev := range s.Sink.Events() {
		if ev.Kind == trace.KindAgentCallStart {
			eps = append(eps, ev.EpisodeID)
		}
	}
	if len(eps) != 2 || eps[0] != "recorded_agent.demo_greeting" || eps[1] != "recorded_agent.demo_greeting_2" {
		t.Errorf("episodes played: %v", eps)
	}
	if rest := s.Cassette.Remaining(); len(rest) != 0 {
		t.Errorf("unplayed: %v", rest)
	}
}
