package main

import (
	"fmt"
	"io"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// agentSetup wires `kitsoki run --cassette FILE` (replay a cassette in
// place of the declared agents) and `--record FILE` (run the real agents
// and write every exchange as a cassette) into the run's runtime.
type agentSetup struct {
	cassette *replay.Cassette
	recorder *replay.Recorder
	record   string
}

// setupAgents loads the cassette to replay or prepares the recording.
func setupAgents(o *runOpts, st *story.Story) (*agentSetup, error) {
	s := &agentSetup{record: o.record}
	switch {
	case o.cassette != "" && o.record != "":
		return nil, fmt.Errorf("--cassette and --record cannot be combined (to add missing episodes to a cassette, set record_mode: new_episodes or %s=new_episodes)", cassette.EnvRecord)
	case o.cassetteStrict && o.cassette == "":
		return nil, fmt.Errorf("--cassette-strict applies to a replay: give --cassette FILE too")
	case o.cassette != "":
		c, err := replay.Load(o.cassette, cassette.WithSecrets(st.Secrets), cassette.WithStrictRequests(o.cassetteStrict))
		if err != nil {
			return nil, err
		}
		s.cassette = c
	case o.record != "":
		s.recorder = replay.NewRecorder(st.App.ID, st.App.Version, cassette.WithSecrets(st.Secrets))
	}
	return s, nil
}

// configure puts the replay or the recording in the runtime's config.
func (s *agentSetup) configure(cfg *runtime.Config) {
	if s.cassette != nil {
		cfg.Cassette = s.cassette
	}
	if s.recorder != nil {
		cfg.Recorder = s.recorder
	}
}

// replayCheck prints, after a turn, the cassette's warnings (an episode
// answered a request other than the one it was recorded for) and its
// misses, and reports whether a call missed. It does nothing without
// --cassette.
func (s *agentSetup) replayCheck(w io.Writer) bool {
	if s.cassette == nil {
		return false
	}
	for _, warn := range s.cassette.TakeWarnings() {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	misses := s.cassette.TakeMisses()
	for _, m := range misses {
		fmt.Fprintf(w, "kitsoki: --cassette %s: %s\n", s.cassette.Path, m)
	}
	return len(misses) > 0
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
