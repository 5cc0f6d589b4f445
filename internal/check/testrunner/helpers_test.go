package testrunner

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// mustCassette parses cassette YAML (no env) or fails the test.
func mustCassette(t testing.TB, yml string, opts ...cassette.LoadOption) *replay.Cassette {
	t.Helper()
	c, err := cassette.Parse([]byte(yml), filepath.Join(t.TempDir(), "c.yaml"), append([]cassette.LoadOption{cassette.WithGetenv(testkit.NoEnv)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return replay.Wrap(c)
}

// firstSetupError runs fxs and returns the run's error or the first
// fixture's setup error (nil when every fixture ran).
func firstSetupError(r *Runner, fxs []*Fixture) (*Report, error) {
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		return rep, err
	}
	if errs := rep.SetupErrors(); len(errs) > 0 {
		return rep, errors.New(errs[0])
	}
	return rep, nil
}

// runFixtures loads the fixtures of app that file names ("" = the app's
// own flows) and runs them with an empty environment (plus opts), failing
// the test when they do not load or the run fails; the runner is closed
// when the test ends.
func runFixtures(t *testing.T, app, file string, opts ...FlowOption) *Report {
	t.Helper()
	fxs, err := LoadFixtures(app, file)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(append([]FlowOption{WithFlowGetenv(testkit.NoEnv)}, opts...)...)
	t.Cleanup(func() { r.Close() })
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
