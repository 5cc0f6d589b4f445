package cassette

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// mustCassette parses cassette YAML (no env) or fails the test.
func mustCassette(t testing.TB, yml string, opts ...LoadOption) *Cassette {
	t.Helper()
	c, err := Parse([]byte(yml), filepath.Join(t.TempDir(), "c.yaml"), append([]LoadOption{WithGetenv(testkit.NoEnv)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// epoch is the fake clocks' start (testrunner.FlowEpoch).
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
