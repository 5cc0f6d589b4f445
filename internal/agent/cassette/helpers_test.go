package cassette

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFiles writes files (relative path → content) into a new temp dir
// and returns the dir.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func noEnv(string) string { return "" }

// mustCassette parses cassette YAML (no env) or fails the test.
func mustCassette(t testing.TB, yml string, opts ...LoadOption) *Cassette {
	t.Helper()
	c, err := Parse([]byte(yml), filepath.Join(t.TempDir(), "c.yaml"), append([]LoadOption{WithGetenv(noEnv)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func contains2(s, sub string) bool { return strings.Contains(s, sub) }

// epoch is the fake clocks' start (testrunner.FlowEpoch).
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
