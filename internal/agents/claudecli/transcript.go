package claudecli

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// TranscriptFormat is the format of the transcript a stream-json call
// captures: the CLI's events, one JSON line each, as it wrote them.
const TranscriptFormat = "claude-stream-json"

// stamped is the stdout of one run: it keeps what capped keeps and notes,
// for each line, the clock reading when its newline arrived.
type stamped struct {
	capped
	clk clock.Clock

	mu    sync.Mutex
	ended []time.Time // one per complete line
}

func (s *stamped) Write(p []byte) (int, error) {
	if n := bytes.Count(p, []byte{'\n'}); n > 0 {
		now := s.clk.Now()
		s.mu.Lock()
		for range n {
			s.ended = append(s.ended, now)
		}
		s.mu.Unlock()
	}
	return s.capped.Write(p)
}

// stamps returns the line end times (after the run, when nothing writes).
func (s *stamped) stamps() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// transcript collects the agent-action transcript of one call across its
// runs: every JSON line the CLI printed, byte for byte, with its offset
// from the call's start, and a _kitsoki nudge row where kitsoki resumed
// the session for a missing submit.
type transcript struct {
	start time.Time
	t     plugin.Transcript
}

func newTranscript(start time.Time) *transcript {
	return &transcript{start: start, t: plugin.Transcript{Format: TranscriptFormat}}
}

// addRun adds a run's stdout lines that are JSON objects; lines of other
// text (progress, noise) are not events of the stream.
func (tr *transcript) addRun(stdout []byte, ends []time.Time) {
	for i, line := range bytes.SplitAfter(stdout, []byte{'\n'}) {
		ev := bytes.TrimRight(line, "\r\n")
		if len(ev) == 0 || ev[0] != '{' || !json.Valid(ev) {
			continue
		}
		at := tr.start
		switch {
		case i < len(ends):
			at = ends[i]
		case len(ends) > 0:
			at = ends[len(ends)-1]
		}
		tr.add(bytes.Clone(ev), at)
	}
}

// addNudge adds the _kitsoki row of a nudge: which resume it was and the
// text kitsoki sent.
func (tr *transcript) addNudge(n int, text string, at time.Time) {
	b, _ := json.Marshal(struct {
		Kitsoki   string `json:"_kitsoki"`
		OuterIter int    `json:"outer_iter"`
		Text      string `json:"text"`
	}{"nudge", n, text})
	tr.add(b, at)
}

func (tr *transcript) add(ev []byte, at time.Time) {
	ms := max(at.Sub(tr.start).Milliseconds(), 0)
	tr.t.Events = append(tr.t.Events, ev)
	tr.t.Timings = append(tr.t.Timings, ms)
}

// result is the transcript with the call's secrets masked, or nil when
// the runs printed no event.
func (tr *transcript) result(secrets []string) *plugin.Transcript {
	if tr == nil || len(tr.t.Events) == 0 {
		return nil
	}
	m := secret.New(secrets)
	out := tr.t
	out.Events = make([]json.RawMessage, len(tr.t.Events))
	for i, ev := range tr.t.Events {
		b, err := m.JSON(ev)
		if err != nil {
			b = ev // a valid line (checked when added) masks cleanly
		}
		out.Events[i] = b
	}
	return &out
}
