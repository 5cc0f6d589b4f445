package testrunner

import (
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
)

// FuzzFlowFixture parses arbitrary flow-fixture files. Parsing must not
// panic, an error must name the file, and parsing is deterministic: the
// same bytes give the same fixtures or the same error.
func FuzzFlowFixture(f *testing.F) {
	const file = "flows/fuzz.yaml"
	f.Fuzz(func(t *testing.T, in []byte) {
		fxs, err := ParseFixtures(in, file, "app.yaml")
		if err != nil {
			// "file: line N: ..." or, for errors that carry a column,
			// "file:N:M: ...".
			if !strings.HasPrefix(err.Error(), file+":") {
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
		{"stub envelopes", "test_kind: flow\nhost_handlers: {y: {by_op: {o: {bad_op: 1}}, by_call: {c: {bad_call: 1}}}}\nturns: []\n", "f.yaml:2:",
			`flows/f.yaml:2:33: host_handlers.y.by_op.o.bad_op: unknown key "bad_op" (valid: data, error, infra_error, delay)`,
			func(b []byte) error { _, err := ParseFixtures(b, "flows/f.yaml", "app.yaml"); return err }},
		{"stubs", "test_kind: flow\nhost_handlers:\n  z: {nope: 1}\n  a: {nada: 1}\nturns: []\n", "f.yaml:3:",
			`flows/f.yaml:3:7: host_handlers.z.nope: unknown key "nope" (valid: data, error, infra_error, delay, by_call, by_op, request_clarification)`,
			func(b []byte) error { _, err := ParseFixtures(b, "flows/f.yaml", "app.yaml"); return err }},
		{"fixture flags", "test_kind: flow\nstrict_cassette_coverage: maybe\nexpect_terminal: perhaps\nturns: []\n", "f.yaml:2:",
			"", // compared with the first run's error below
			func(b []byte) error { _, err := ParseFixtures(b, "flows/f.yaml", "app.yaml"); return err }},
		{"cassette fields", "kind: host_cassette\nrecord_mode: [x]\napp_id: {y: 1}\n", "c.yaml:2:",
			"", func(b []byte) error { _, err := cassette.Parse(b, "c.yaml"); return err }},
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
