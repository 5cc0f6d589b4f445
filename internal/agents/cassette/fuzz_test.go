package cassette

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/clock"
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
		c, err := Parse(in, path, opts...)
		if err != nil {
			if !strings.HasPrefix(err.Error(), `cassette: `+path+`:`) {
				t.Fatalf("error does not name the cassette: %v", err)
			}
			return
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("a parsed cassette does not encode: %v", err)
		}
		c2, err := Parse(enc, path, opts...)
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
