package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// FuzzRead feeds arbitrary bytes to the trace reader. A read either
// succeeds or fails with a *FormatError; the payload-free scan the writer
// resumes from (scanPosition) accepts and refuses exactly the same files
// and ends at the last event read. The events of an accepted trace, written
// again through a MemSink, read back as the same events (timestamps aside:
// the writer normalises them to UTC), and writing those once more gives the
// same bytes.
func FuzzRead(f *testing.F) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, in []byte) {
		_, evs, err := ReadAll(bytes.NewReader(in))
		pos, perr := scanPosition(bytes.NewReader(in))
		if (err == nil) != (perr == nil) || (err != nil && err.Error() != perr.Error()) {
			t.Fatalf("ReadAll and scanPosition disagree: %v / %v", err, perr)
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("read error is %T, want *FormatError: %v", err, err)
			}
			return
		}
		if len(evs) > 0 {
			last := evs[len(evs)-1]
			if want := (position{any: true, turn: last.Turn, seq: last.Seq}); pos != want {
				t.Fatalf("scanPosition = %+v, want %+v", pos, want)
			}
		} else if pos.any {
			t.Fatalf("scanPosition found events in a trace without any: %+v", pos)
		}
		write := func(evs []Event) ([]byte, bool) {
			m := NewMemSink(WithClock(clock.NewFake(at)))
			for _, ev := range evs {
				if err := m.Append(&ev); err != nil {
					// The reader accepts what the writer refuses to
					// write (a ts that is not RFC 3339, a non-NFC
					// string, a negative match_idx): nothing to compare.
					return nil, false
				}
			}
			return m.Bytes(), true
		}
		out, ok := write(evs)
		if !ok {
			return
		}
		evs2, err := Read(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("the reader refuses what the writer wrote: %v\n%s", err, out)
		}
		if diff := cmp.Diff(evs, evs2, cmpopts.IgnoreFields(Event{}, "TS"), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("events changed on a write and read (-read +rewritten):\n%s", diff)
		}
		out2, _ := write(evs2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("writing the rewritten events again gives other bytes:\n%s\n%s", out, out2)
		}
	})
}

// TestReadFuzzFindings pins the messages of lines FuzzRead found worded
// differently by ReadAll and the position scan (each is also a seed under
// testdata/fuzz/FuzzRead).
func TestReadFuzzFindings(t *testing.T) {
	const header = `{"kind":"session.header","schema_version":1,"written_at":"2026-01-01T00:00:00Z"}` + "\n"
	tests := []struct{ name, line, want string }{
		// ReadAll said "unexpected EOF".
		{"truncated object", `{"turn":0,"seq":1,"kind":"` + "\n",
			"trace corrupted: line 2: unexpected end of JSON input"},
		// ReadAll said "invalid character '}' looking for beginning of value".
		{"bytes after the object", `{"turn":0,"seq":0,"kind":"x","payload":{}}}` + "\n",
			"trace corrupted: line 2: invalid character '}' after top-level value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadAll(strings.NewReader(header + tc.line))
			_, perr := scanPosition(strings.NewReader(header + tc.line))
			for _, e := range []error{err, perr} {
				if e == nil || e.Error() != tc.want {
					t.Errorf("error %v, want %q", e, tc.want)
				}
			}
		})
	}
}
