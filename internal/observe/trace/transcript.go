package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// Transcript is an agent call's agent-action transcript: the events of
// the transport's own execution stream (the claude CLI's stream-json
// lines, for one), each one line of JSON kept byte for byte, and the
// millisecond offset at which each event was captured.
type Transcript = plugin.Transcript

// TranscriptDir is the directory, beside the trace file, that holds the
// agent-action sidecars.
const TranscriptDir = "transcripts"

// TranscriptSchemaVersion is the schema_version of a transcript_ref.
const TranscriptSchemaVersion = 1

// TranscriptRef is the transcript_ref of agent.call.complete and
// agent.call.error: where the call's sidecar is (Path, relative to the
// trace file's directory, with forward slashes), its format and how many
// events it holds. The trace carries nothing else of the transcript.
type TranscriptRef struct {
	Events        int    `json:"events"`
	Format        string `json:"format"`
	Path          string `json:"path"`
	SchemaVersion int    `json:"schema_version"`
}

func (p TranscriptRef) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("format", &p.Format)
	s.str("path", &p.Path)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

// transcriptRef scrubs a payload's transcript_ref.
func (s *scrubber) transcriptRef(r *TranscriptRef) *TranscriptRef {
	if r == nil {
		return nil
	}
	out, changed := s.typed("transcript_ref", *r)
	if !changed {
		return r
	}
	c, _ := out.(TranscriptRef)
	return &c
}

// TranscriptSink is a sink that keeps agent-action transcripts beside its
// trace: Writer in files under transcripts/ next to the trace file,
// MemSink in memory (Sidecars). WriteTranscript stores the transcript of
// call callID and returns the reference the call's closing event carries.
type TranscriptSink interface {
	WriteTranscript(callID string, t *Transcript) (*TranscriptRef, error)
}

// WriteTranscript stores t through s when s keeps transcripts (a sink that
// wraps another forwards to it). It returns nil, nil when t is nil or
// empty, or when s keeps no transcripts (Discard, a test's sink).
func WriteTranscript(s any, callID string, t *Transcript) (*TranscriptRef, error) {
	if t == nil || len(t.Events) == 0 {
		return nil, nil
	}
	ts, ok := s.(TranscriptSink)
	if !ok {
		return nil, nil
	}
	return ts.WriteTranscript(callID, t)
}

// ErrBadTranscript is the cause of a transcript that cannot be written as
// a sidecar: an event that is not one line of JSON, more timings than
// events, a negative offset, a call_id that cannot name a file.
var ErrBadTranscript = errors.New("bad agent-action transcript")

// Sidecar is one file of a transcript: its contents and its path relative
// to the trace file's directory (forward slashes).
type Sidecar struct {
	Path string
	Data []byte
}

// EncodeTranscript renders t as its two sidecar files: <base>.jsonl (each
// event, secrets masked, then a newline) and, when t has timings,
// <base>.timings ("<event-index> <ms-offset>" a line). An event that is
// not one line of JSON, or more timings than events, is an error.
func EncodeTranscript(t *Transcript, mask *secret.Masker) (jsonl, timings []byte, err error) {
	if len(t.Timings) > len(t.Events) {
		return nil, nil, fmt.Errorf("%w: %d timings for %d events: give at most one offset per event", ErrBadTranscript, len(t.Timings), len(t.Events))
	}
	var b bytes.Buffer
	for i, ev := range t.Events {
		if bytes.ContainsAny(ev, "\r\n") || !json.Valid(ev) {
			return nil, nil, fmt.Errorf("%w: event %d is not one line of JSON", ErrBadTranscript, i)
		}
		m, err := mask.JSON(ev)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: event %d: %w", ErrBadTranscript, i, err)
		}
		b.Write(m)
		b.WriteByte('\n')
	}
	if len(t.Timings) == 0 {
		return b.Bytes(), nil, nil
	}
	var tb bytes.Buffer
	for i, ms := range t.Timings {
		if ms < 0 {
			return nil, nil, fmt.Errorf("%w: timing %d is negative (%d)", ErrBadTranscript, i, ms)
		}
		tb.WriteString(strconv.Itoa(i))
		tb.WriteByte(' ')
		tb.WriteString(strconv.FormatInt(ms, 10))
		tb.WriteByte('\n')
	}
	return b.Bytes(), tb.Bytes(), nil
}

// sidecarStore picks and records the names of a trace's sidecars. A call's
// transcript is transcripts/<call_id>.jsonl (and .timings). When that
// name holds other bytes already (another session's call that got the
// same call_id, in a directory several traces share), the next free
// <call_id>.<n> is used; the same bytes again (a resumed or replayed run)
// reuse the name.
type sidecarStore struct {
	mu   sync.Mutex
	mask *secret.Masker
	// has reports whether rel is taken and, when it is, with what bytes.
	has func(rel string) ([]byte, bool, error)
	// put stores the bytes under rel.
	put func(rel string, b []byte) error
}

func (s *sidecarStore) write(callID string, t *Transcript) (*TranscriptRef, error) {
	if !validCallID(callID) {
		return nil, fmt.Errorf("%w: call_id %q cannot name a file", ErrBadTranscript, callID)
	}
	jsonl, timings, err := EncodeTranscript(t, s.mask)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := 1; ; n++ {
		stem := callID
		if n > 1 {
			stem += "." + strconv.Itoa(n)
		}
		rel := path.Join(TranscriptDir, stem)
		fits, err := s.fits(rel+".jsonl", jsonl)
		if err == nil && fits && timings != nil {
			fits, err = s.fits(rel+".timings", timings)
		}
		if err != nil {
			return nil, err
		}
		if !fits {
			continue
		}
		if err := s.put(rel+".jsonl", jsonl); err != nil {
			return nil, err
		}
		if timings != nil {
			if err := s.put(rel+".timings", timings); err != nil {
				return nil, err
			}
		}
		return &TranscriptRef{Format: t.Format, Path: rel + ".jsonl", Events: len(t.Events), SchemaVersion: TranscriptSchemaVersion}, nil
	}
}

// fits reports whether rel is free or holds exactly b.
func (s *sidecarStore) fits(rel string, b []byte) (bool, error) {
	old, ok, err := s.has(rel)
	if err != nil || !ok {
		return err == nil, err
	}
	return bytes.Equal(old, b), nil
}

// validCallID reports whether id is safe as a file name: letters, digits,
// '-' and '_' (a call_id is 16 hex digits; a plugin's own is checked).
func validCallID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// fileSidecars is the sidecar store of a trace file: files under the
// file's directory, private (0600) like the trace.
func fileSidecars(tracePath string, mask *secret.Masker) *sidecarStore {
	dir := filepath.Dir(tracePath)
	return &sidecarStore{mask: mask,
		has: func(rel string) ([]byte, bool, error) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if errors.Is(err, fs.ErrNotExist) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, fmt.Errorf("transcript: %w", err)
			}
			return b, true, nil
		},
		put: func(rel string, b []byte) error {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := outfile.MkdirAll(filepath.Dir(p)); err != nil {
				return fmt.Errorf("transcript: %w", err)
			}
			if err := outfile.WriteFile(p, b); err != nil {
				return fmt.Errorf("transcript: %w", err)
			}
			return nil
		}}
}

// memSidecars is the sidecar store of a MemSink: the files in memory, in
// the order they were written.
type memSidecars struct {
	store sidecarStore
	files []Sidecar
}

func newMemSidecars(mask *secret.Masker) *memSidecars {
	m := &memSidecars{}
	m.store = sidecarStore{mask: mask,
		has: func(rel string) ([]byte, bool, error) {
			for _, f := range m.files {
				if f.Path == rel {
					return f.Data, true, nil
				}
			}
			return nil, false, nil
		},
		put: func(rel string, b []byte) error {
			for i := range m.files {
				if m.files[i].Path == rel {
					return nil // the same bytes: fits checked
				}
			}
			m.files = append(m.files, Sidecar{Path: rel, Data: bytes.Clone(b)})
			return nil
		}}
	return m
}

// list copies the files out (under the store's lock).
func (m *memSidecars) list() []Sidecar {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	out := make([]Sidecar, len(m.files))
	for i, f := range m.files {
		out[i] = Sidecar{Path: f.Path, Data: bytes.Clone(f.Data)}
	}
	return out
}

// ReadTranscript reads the sidecar ref points at, in dir (the trace
// file's directory): its events and, when there is a .timings file, their
// offsets. A path that leaves transcripts/ is refused, so a trace cannot
// make its reader open another file.
func ReadTranscript(dir string, ref *TranscriptRef) (*Transcript, error) {
	rel := path.Clean(ref.Path)
	if !strings.HasPrefix(rel, TranscriptDir+"/") || strings.Contains(rel, "..") || !strings.HasSuffix(rel, ".jsonl") {
		return nil, fmt.Errorf("%w: transcript_ref.path %q is not a sidecar under %s/", ErrBadTranscript, ref.Path, TranscriptDir)
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	t := &Transcript{Format: ref.Format}
	for line := range bytes.Lines(b) {
		ev := bytes.TrimRight(line, "\r\n")
		if len(ev) == 0 {
			continue
		}
		if !json.Valid(ev) {
			return nil, fmt.Errorf("%w: %s: line %d is not JSON", ErrBadTranscript, p, len(t.Events)+1)
		}
		t.Events = append(t.Events, json.RawMessage(bytes.Clone(ev)))
	}
	tb, err := os.ReadFile(strings.TrimSuffix(p, ".jsonl") + ".timings")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, fmt.Errorf("transcript: %w", err)
	}
	if t.Timings, err = parseTimings(tb); err != nil {
		return nil, fmt.Errorf("%w: %s.timings: %w", ErrBadTranscript, strings.TrimSuffix(p, ".jsonl"), err)
	}
	if len(t.Timings) > len(t.Events) {
		return nil, fmt.Errorf("%w: %s: %d timings for %d events", ErrBadTranscript, p, len(t.Timings), len(t.Events))
	}
	return t, nil
}

// parseTimings reads "<event-index> <ms-offset>" lines, indexes 0, 1, 2,
// ... in order.
func parseTimings(b []byte) ([]int64, error) {
	var out []int64
	n := 0
	for line := range bytes.Lines(b) {
		n++
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"<event-index> <ms-offset>\"", n)
		}
		i, err1 := strconv.Atoi(f[0])
		ms, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || ms < 0 {
			return nil, fmt.Errorf("line %d: want \"<event-index> <ms-offset>\", two whole numbers", n)
		}
		if i != len(out) {
			return nil, fmt.Errorf("line %d: event index %d, want %d (one line per event, in order)", n, i, len(out))
		}
		out = append(out, ms)
	}
	return out, nil
}
