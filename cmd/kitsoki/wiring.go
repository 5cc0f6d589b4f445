package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// runtimeConfig is what a run started over MCP needs beyond its story.
type runtimeConfig struct {
	session string
	trace   string
	world   map[string]any
	// title is the run's title from whoever started it ("" for none).
	title   string
	timeout time.Duration
	logger  *slog.Logger
	// models is the local model pool the server's runs share (nil: the
	// run's own).
	models *localllm.Pool
}

// openRuntime opens a live run of a story with a new trace file, as the
// external MCP surface's run-starting tool needs it. Pins are honoured as
// in kitsoki run (never strictly: the tool has no --strict-pins); one that
// cannot be is logged and the call takes its fallback route.
func openRuntime(st *story.Story, c runtimeConfig) (*runtime.Runtime, error) {
	return runtime.Open(st, runtime.Config{
		Logger:      c.logger,
		Trace:       runtime.Trace{Path: c.trace},
		Agents:      runtime.Agents{Live: true},
		Timeout:     c.timeout,
		Session:     &runtime.Session{ID: c.session, World: c.world, Title: c.title},
		LocalModels: c.models,
	})
}

// pinWarnings prints each selection pin that is not honoured as a warning
// on stderr.
func pinWarnings(stderr io.Writer) func(string) {
	return func(w string) { fmt.Fprintf(stderr, "warning: %s\n", w) }
}
