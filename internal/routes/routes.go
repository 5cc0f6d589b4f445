// Package routes holds what a story's selection: pins become: the route of
// every pinned invoke and a warning for each pin that is not honoured. The
// composition root (internal/runtime) applies them the same way for every
// run; the resolver that reads a pin's evidence is eval.ResolvePins.
package routes

import (
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/story"
)

// Pins is what became of a story's selection: pins: the route of every
// pinned invoke (honoured or not), and one warning per pin that was not
// honoured.
type Pins struct {
	Routes   map[*story.Invoke]*host.Route
	Warnings []string
}

// Err is nil when every pin was honoured, else an error listing the
// warnings: what `--strict-pins` turns them into.
func (p *Pins) Err() error {
	if len(p.Warnings) == 0 {
		return nil
	}
	return fmt.Errorf("pins not honoured (--strict-pins):\n  %s", strings.Join(p.Warnings, "\n  "))
}

// Resolver resolves a story's pins.
type Resolver func(st *story.Story) *Pins
