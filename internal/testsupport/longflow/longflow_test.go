package longflow

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the generated story and its flow and cassette exist, so the
// benchmarks that use them (run only with -bench) cannot silently break
// when this package or the hello story moves.
func TestWrite(t *testing.T) {
	app := Write(t, 3)
	for _, f := range []string{app, filepath.Join(filepath.Dir(app), "flows", "long.yaml"), filepath.Join(filepath.Dir(app), "cassette.yaml")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}
