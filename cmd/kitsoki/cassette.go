package main

import (
	"fmt"
	"io"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/kitsoki/kitsoki/internal/testrunner"
)

// agentSetup wires `kitsoki run --cassette FILE` (replay a cassette in
// place of the declared agents) and `--record FILE` (run the real agents
// and write every exchange as a cassette).
type agentSetup struct {
	cassette *testrunner.Cassette
	builtin  agent.Agent
	recorder *testrunner.Recorder
	record   string
	st       *story.Story
	reg      *agent.Registry
}

// setupAgents prepares the replay or the recording; call it once the
// registry holds the story's agents.
func setupAgents(o *runOpts, st *story.Story, reg *agent.Registry) (*agentSetup, error) {
	s := &agentSetup{st: st, reg: reg, record: o.record}
	switch {
	case o.cassette != "" && o.record != "":
		return nil, fmt.Errorf("--cassette and --record cannot be combined (to add missing episodes to a cassette, set record_mode: new_episodes or %s=new_episodes)", testrunner.EnvRecord)
	case o.cassette != "":
		c, err := testrunner.LoadCassette(o.cassette, testrunner.WithSecrets(st.Secrets))
		if err != nil {
			return nil, err
		}
		s.cassette = c
		s.builtin = c.ReplayAgents(st, reg, nil)
	case o.record != "":
		s.recorder = testrunner.NewRecorder(st.App.ID, st.App.Version, testrunner.WithSecrets(st.Secrets))
	}
	return s, nil
}

// hostOptions are the host.New options the setup needs.
func (s *agentSetup) hostOptions() []host.Option {
	if s.builtin != nil {
		return []host.Option{host.WithBuiltin(s.builtin)}
	}
	return nil
}

// install puts the cassette's host handlers, or the recorder's wrappers,
// on the host.
func (s *agentSetup) install(h *host.Host, sink host.Sink) {
	switch {
	case s.cassette != nil:
		s.cassette.ReplayHandlers(h, sink, s.st.App.ID)
	case s.recorder != nil:
		s.recorder.Install(s.st, s.reg, h)
	}
}

// finish writes the recording and reports a failure to append recorded
// episodes to a new_episodes cassette.
func (s *agentSetup) finish(stderr io.Writer) {
	if s.cassette != nil {
		if err := s.cassette.WriteErr(); err != nil {
			fmt.Fprintln(stderr, "kitsoki:", err)
		}
	}
	if s.recorder != nil {
		if err := s.recorder.WriteFile(s.record); err != nil {
			fmt.Fprintln(stderr, "kitsoki:", err)
			return
		}
		fmt.Fprintf(stderr, "kitsoki: recorded %d episode(s) to %s\n", s.recorder.Len(), s.record)
	}
}
