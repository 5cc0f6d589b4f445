package main

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// localDriver drives the session of a runtime a test opened.
func localDriver(rt *runtime.Runtime) *driver.Local { return driver.NewLocal(rt) }

// runInteractive runs the hello story at the prompt, fed from input.
func runInteractive(t *testing.T, input string) (int, string, string) {
	t.Helper()
	return runInteractiveWith(t, nil, input)
}
