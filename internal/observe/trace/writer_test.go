package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCreateWritesHeaderAndParentDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "session.jsonl")
	w, err := Create(path, WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := `{"kind":"session.header","schema_version":1,"written_at":"` + t0TS + `"}` + "\n"
	if got := string(mustRead(t, path)); got != want {
		t.Errorf("new file = %q, want %q", got, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode = %v, want 0600", perm)
	}
	if w.Path() != path {
		t.Errorf("Path() = %q", w.Path())
	}
	if _, ok := w.LastTurn(); ok {
		t.Error("LastTurn reports an event in a new trace")
	}
}

func TestCreateOnEmptyFileWritesHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := lines(mustRead(t, path)); len(got) != 1 || !strings.Contains(got[0], `"kind":"session.header"`) {
		t.Errorf("empty file after Create = %q", got)
	}
}

func TestResumeAppendsToExistingTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path, WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []Event{{Turn: 0, Kind: "seed"}, {Turn: 1, Kind: "a"}, {Turn: 1, Kind: "b"}} {
		mustAppend(t, w, &ev)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	header := lines(mustRead(t, path))[0]

	w, err = Create(path, WithClock(fakeClock()))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	defer w.Close()
	if turn, ok := w.LastTurn(); !ok || turn != 1 {
		t.Errorf("LastTurn after resume = %d, %v; want 1, true", turn, ok)
	}
	if err := w.Append(&Event{Turn: 0, Kind: "late"}); err == nil || !strings.Contains(err.Error(), "turns never decrease") {
		t.Errorf("Append(turn 0) after resume at turn 1 = %v", err)
	}
	c := &Event{Turn: 1, Kind: "c"}
	mustAppend(t, w, c)
	if c.Seq != 2 {
		t.Errorf("resumed seq = %d, want 2", c.Seq)
	}
	mustAppend(t, w, &Event{Turn: 2, Kind: "d"})
	if err := w.EndTurn(); err != nil {
		t.Fatal(err)
	}

	got := lines(mustRead(t, path))
	if got[0] != header || strings.Count(strings.Join(got, "\n"), "session.header") != 1 {
		t.Errorf("resume rewrote or repeated the header: %q", got)
	}
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile after resume: %v", err)
	}
	type ts struct {
		Turn int64
		Seq  int
		Kind string
	}
	var pos []ts
	for _, e := range evs {
		pos = append(pos, ts{e.Turn, e.Seq, e.Kind})
	}
	want := []ts{{0, 0, "seed"}, {1, 0, "a"}, {1, 1, "b"}, {1, 2, "c"}, {2, 0, "d"}}
	if diff := cmp.Diff(want, pos); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestResumeHeaderOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, err = Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ev := &Event{Turn: 0, Kind: "k"}
	mustAppend(t, w, ev)
	if ev.Seq != 0 {
		t.Errorf("seq = %d", ev.Seq)
	}
}

func TestResumeRefusesCorruptTrace(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"torn last line", hdr + `{"turn":1,"seq":0,"ts":"x","kind":"a","payload":{}}` + "\n" + `{"turn":1,"se`,
			"trace corrupted: missing trailing newline at EOF (the last line is incomplete, most likely cut by a crash during a write; delete the bytes after the last newline to resume this trace)"},
		{"no header", `{"turn":1,"seq":0,"ts":"x","kind":"a","payload":{}}` + "\n", "trace missing session.header on line 1"},
		{"payload not object", hdr + `{"turn":1,"seq":0,"kind":"a","payload":[1]}` + "\n", "trace corrupted: line 2: payload is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Create(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "cannot append to") {
				t.Fatalf("Create = %v, want error containing %q", err, tt.want)
			}
			if got := string(mustRead(t, path)); got != tt.content {
				t.Errorf("refused resume changed the file: %q", got)
			}
			// The lock was released: another writer may try again.
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := Create(path)
			if err != nil {
				t.Fatalf("Create after refused resume: %v", err)
			}
			w.Close()
		})
	}
}

func TestLockContention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, &Event{Turn: 1, Kind: "a"})
	before := mustRead(t, path)

	_, err = Create(path)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "trace file is locked by another writer") {
		t.Fatalf("second Create = %v, want %v", err, ErrLocked)
	}
	if !bytes.Equal(before, mustRead(t, path)) {
		t.Error("refused writer changed the file")
	}
	// The first writer is unaffected.
	mustAppend(t, w, &Event{Turn: 1, Kind: "b"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2, err := Create(path)
	if err != nil {
		t.Fatalf("Create after Close: %v", err)
	}
	w2.Close()
}

func TestReplacedFile(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, path string)
	}{
		{"renamed over", func(t *testing.T, path string) {
			other := path + ".new"
			if err := os.WriteFile(other, []byte(hdr), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"moved away", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		// Detected at the first append of the next turn.
		t.Run(tt.name+"/append", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			w, err := Create(path, WithClock(fakeClock()))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			mustAppend(t, w, &Event{Turn: 1, Kind: "a"})
			tt.replace(t, path)
			err = w.Append(&Event{Turn: 2, Kind: "b"})
			if !errors.Is(err, ErrReplaced) || !strings.Contains(err.Error(), "trace file replaced under us") {
				t.Fatalf("Append after replacement = %v", err)
			}
			// Sticky: the same turn does not get through either.
			if err := w.Append(&Event{Turn: 2, Kind: "c"}); !errors.Is(err, ErrReplaced) {
				t.Errorf("second Append = %v", err)
			}
			if err := w.EndTurn(); !errors.Is(err, ErrReplaced) {
				t.Errorf("EndTurn = %v", err)
			}
		})
		// Detected at the end of the turn it happened in.
		t.Run(tt.name+"/endturn", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			w, err := Create(path, WithClock(fakeClock()))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			mustAppend(t, w, &Event{Turn: 1, Kind: "a"})
			tt.replace(t, path)
			if err := w.EndTurn(); !errors.Is(err, ErrReplaced) {
				t.Fatalf("EndTurn after replacement = %v", err)
			}
		})
	}
}

// Within one long turn the identity is rechecked once a second.
func TestReplacedFileDuringLongTurn(t *testing.T) {
	clk := fakeClock()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mustAppend(t, w, &Event{Turn: 1, Kind: "a"})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, &Event{Turn: 1, Kind: "b"}) // same turn, within a second: not checked
	clk.Advance(identityCheckInterval)
	if err := w.Append(&Event{Turn: 1, Kind: "c"}); !errors.Is(err, ErrReplaced) {
		t.Fatalf("Append a second later = %v", err)
	}
}

func TestSyncPerEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path, WithSyncPerEvent(), WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		mustAppend(t, w, &Event{Turn: 1, Kind: "k", Payload: map[string]any{"i": i}})
		if w.dirty {
			t.Fatalf("line %d not fsynced", i)
		}
	}
	if got := len(lines(mustRead(t, path))); got != 4 {
		t.Errorf("%d lines, want 4", got)
	}
}

// Each Append reaches the file before it returns, without waiting for
// EndTurn: a reader sees it at once.
func TestAppendIsVisibleImmediately(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mustAppend(t, w, &Event{Turn: 1, Kind: "a"})
	evs, err := ReadFile(path)
	if err != nil || len(evs) != 1 {
		t.Fatalf("ReadFile before EndTurn = %v, %v", evs, err)
	}
}

// The whole file, header to last line, never contains a secret value.
func TestWrittenTraceContainsNoSecrets(t *testing.T) {
	secrets := []string{"sk-ant-api03-Zx9QfakeSecretValue", "ghp_fAkEtOkEn123", "s3cr3t<&>"}
	path := filepath.Join(t.TempDir(), "run", "trace.jsonl")
	w, err := Create(path, WithSecrets(secrets))
	if err != nil {
		t.Fatal(err)
	}
	type toolCall struct {
		Args map[string]any `json:"args"`
	}
	submission, _ := json.Marshal(map[string]any{"note": "the key is ghp_fAkEtOkEn123"})
	events := []Event{
		{Turn: 1, Kind: KindTurnInput, Payload: map[string]any{"input": "use sk-ant-api03-Zx9QfakeSecretValue please", "intent": ""}},
		{Turn: 1, Kind: KindAgentCallStart, CallID: "c1", Payload: map[string]any{
			"verb": "decide", "prompt": "token=ghp_fAkEtOkEn123\nkey=sk-ant-api03-Zx9QfakeSecretValue",
			"input": map[string]any{"headers": map[string]any{"Authorization": "Bearer opaque-value-1"}},
		}},
		{Turn: 1, Kind: KindAgentCallComplete, CallID: "c1", Payload: map[string]any{
			"verb": "decide", "duration_ms": 12,
			"response": map[string]any{"submission": json.RawMessage(submission), "meta": map[string]any{"echo": []string{"s3cr3t<&>"}}},
		}},
		{Turn: 1, Kind: KindHarnessReturned, Payload: map[string]any{"data": toolCall{Args: map[string]any{"pw": "xs3cr3t<&>x"}}}},
		{Turn: 1, Kind: KindAgentCallError, CallID: "c2", Payload: map[string]any{
			"error":  `transport: 401 {"error":"bad key sk-ant-api03-Zx9QfakeSecretValue"}`,
			"Cookie": "session=opaque-value-2",
		}},
	}
	for i := range events {
		mustAppend(t, w, &events[i])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := mustRead(t, path)
	escaped := func(s string) string { b, _ := json.Marshal(s); return strings.Trim(string(b), `"`) }
	for _, s := range append(secrets, "opaque-value-1", "opaque-value-2") {
		for _, form := range []string{s, escaped(s)} {
			if bytes.Contains(data, []byte(form)) {
				t.Errorf("trace contains secret %q", form)
			}
		}
	}
	if n := bytes.Count(data, []byte(Redacted)); n < 8 {
		t.Errorf("only %d REDACTED markers in:\n%s", n, data)
	}
	if _, err := ReadFile(path); err != nil {
		t.Errorf("redacted trace unreadable: %v", err)
	}
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Create(directory) = %v, want an error naming %s", err, dir)
	}
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(file, "t.jsonl")); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Create under a file = %v", err)
	}
}
