package testrunner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/clock"
)

// fuzzCassetteDir is a directory holding the files the cassette seeds
// !include, written once per fuzz process.
func fuzzCassetteDir(f *testing.F) string {
	dir := f.TempDir()
	for name, data := range map[string]string{
		"verdict.json": `{"decision": "approve", "reason": "Within policy.", "confidence": 0.9}`,
		"prompt.md":    "Review the expense.\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	return dir
}

// FuzzCassette parses arbitrary cassette bytes. A cassette that parses is
// encoded, and the encoding must parse again and encode to the same
// bytes: what `kitsoki run --record` and `trace to-cassette` write is
// always a cassette kitsoki reads back unchanged.
func FuzzCassette(f *testing.F) {
	dir := fuzzCassetteDir(f)
	path := filepath.Join(dir, "cassette.yaml")
	opts := []LoadOption{WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))),
		WithGetenv(func(string) string { return "" })}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := ParseCassette(in, path, opts...)
		if err != nil {
			if !strings.HasPrefix(err.Error(), `cassette: "`+path+`": `) {
				t.Fatalf("error does not name the cassette: %v", err)
			}
			return
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("a parsed cassette does not encode: %v", err)
		}
		c2, err := ParseCassette(enc, path, opts...)
		if err != nil {
			t.Fatalf("the encoded cassette does not parse: %v\n%s", err, enc)
		}
		enc2, err := c2.Encode()
		if err != nil {
			t.Fatalf("the re-parsed cassette does not encode: %v", err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable (-first +second):\n%s", cmp.Diff(string(enc), string(enc2)))
		}
	})
}

// FuzzFlowFixture parses arbitrary flow-fixture files. Parsing must not
// panic, an error must name the file, and parsing is deterministic: the
// same bytes give the same fixtures or the same error.
func FuzzFlowFixture(f *testing.F) {
	const file = "flows/fuzz.yaml"
	f.Fuzz(func(t *testing.T, in []byte) {
		fxs, err := ParseFixtures(in, file, "app.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), file+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
		}
		fxs2, err2 := ParseFixtures(in, file, "app.yaml")
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("a second parse fails otherwise: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		if len(fxs) != len(fxs2) {
			t.Fatalf("a second parse gives %d fixtures, the first %d", len(fxs2), len(fxs))
		}
		for i, fx := range fxs {
			if fx.File != file || fx.Index != i {
				t.Fatalf("fixture %d is named %s[%d]", i, fx.File, fx.Index)
			}
		}
	})
}

// TestParseReportsFirstErrorWritten pins FuzzFlowFixture's finding: of
// several bad entries, the error named one picked by Go's random map order,
// so the same file failed with different messages from run to run. Each
// input is parsed many times; the error must be the first bad entry
// written.
func TestParseReportsFirstErrorWritten(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		line  string // where the first bad entry is
		want  string // the whole message, when pinned
		parse func([]byte) error
	}{
		{"stub envelopes", "test_kind: flow\nhost_handlers: {y: {by_op: {o: {bad_op: 1}}, by_call: {c: {bad_call: 1}}}}\nturns: []\n", "line 2:",
			`flows/f.yaml: line 2: host_handlers.y.by_op.o: unknown key "bad_op" (valid: data, error, infra_error)`,
			func(b []byte) error { _, err := ParseFixtures(b, "flows/f.yaml", "app.yaml"); return err }},
		{"stubs", "test_kind: flow\nhost_handlers:\n  z: {nope: 1}\n  a: {nada: 1}\nturns: []\n", "line 3:",
			`flows/f.yaml: line 3: host_handlers.z: unknown key "nope" (valid: data, error, infra_error, delay, by_call, by_op)`,
			func(b []byte) error { _, err := ParseFixtures(b, "flows/f.yaml", "app.yaml"); return err }},
		{"fixture flags", "test_kind: flow\nstrict_cassette_coverage: maybe\nexpect_terminal: perhaps\nturns: []\n", "line 2:",
			"", // compared with the first run's error below
			func(b []byte) error { _, err := ParseFixtures(b, "flows/f.yaml", "app.yaml"); return err }},
		{"cassette fields", "kind: host_cassette\nrecord_mode: [x]\napp_id: {y: 1}\n", "line 2:",
			"", func(b []byte) error { _, err := ParseCassette(b, "c.yaml"); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first := tc.parse([]byte(tc.in))
			if first == nil {
				t.Fatal("parse succeeded, want an error")
			}
			if tc.want != "" && first.Error() != tc.want {
				t.Fatalf("error %q, want %q", first, tc.want)
			}
			if !strings.Contains(first.Error(), tc.line) {
				t.Errorf("error %q does not name %q, the first bad entry", first, strings.TrimSuffix(tc.line, ":"))
			}
			for range 50 {
				if err := tc.parse([]byte(tc.in)); err == nil || err.Error() != first.Error() {
					t.Fatalf("error %v, earlier %v", err, first)
				}
			}
		})
	}
}
