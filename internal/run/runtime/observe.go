package runtime

import (
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// observedSink hands every event its sink accepted to an observer.
type observedSink struct {
	orchestrator.Sink
	obs trace.Observer
}

func (s observedSink) Append(ev *trace.Event) error {
	if err := s.Sink.Append(ev); err != nil {
		return err
	}
	s.obs.Observe(ev, nil)
	return nil
}

func (s observedSink) AppendPayload(ev *trace.Event, p trace.Payload) error {
	if err := s.Sink.AppendPayload(ev, p); err != nil {
		return err
	}
	s.obs.Observe(ev, p)
	return nil
}

// WriteTranscript keeps a call's transcript in the sink it wraps, when
// that one keeps transcripts.
func (s observedSink) WriteTranscript(callID string, t *trace.Transcript) (*trace.TranscriptRef, error) {
	return trace.WriteTranscript(s.Sink, callID, t)
}
