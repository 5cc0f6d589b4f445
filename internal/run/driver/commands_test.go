package driver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// wordCommands knows the words it is given and prints "<tag> <line>".
type wordCommands struct {
	tag, help string
	words     []string
}

func (w wordCommands) Names() []string { return w.words }
func (w wordCommands) Help() string    { return w.help }
func (w wordCommands) Run(_ context.Context, line string, out, _ io.Writer) bool {
	for _, n := range w.words {
		if n == line {
			fmt.Fprintln(out, w.tag, line)
			return true
		}
	}
	return false
}

// TestJoin: joined commands list their names and help in order, skip a
// nil entry, and run a line on the first that knows it.
func TestJoin(t *testing.T) {
	j := Join(wordCommands{"a", "help a", []string{":x", ":y"}}, nil, wordCommands{"b", "", []string{":y", ":z"}})
	if d := cmp.Diff([]string{":x", ":y", ":y", ":z"}, j.Names()); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if j.Help() != "help a" {
		t.Errorf("help %q", j.Help())
	}
	var out bytes.Buffer
	for _, line := range []string{":y", ":z"} {
		if !j.Run(context.Background(), line, &out, io.Discard) {
			t.Errorf("%s not run", line)
		}
	}
	if j.Run(context.Background(), ":w", &out, io.Discard) {
		t.Error(":w was run")
	}
	if out.String() != "a :y\nb :z\n" {
		t.Errorf("out %q", out.String())
	}
}

// TestCostCapExitsAsAnAgentFailure: a spending cap reached, however
// wrapped, exits 4 (an agent failure), at the start of a run and mid-turn.
func TestCostCapExitsAsAnAgentFailure(t *testing.T) {
	capErr := fmt.Errorf("turn 3: %w", &agent.CostCapError{Scope: "--max-cost", Fix: "raise --max-cost", Cap: 0.01, Spent: 0.02, Calls: 2})
	if got := CodeOf(capErr); got != ExitAgent {
		t.Errorf("CodeOf(cost cap) = %d, want %d", got, ExitAgent)
	}
	if got := failCode(capErr); got != ExitAgent {
		t.Errorf("failCode(cost cap) = %d, want %d", got, ExitAgent)
	}
	if got := failCode(fmt.Errorf("disk full")); got != ExitFailure {
		t.Errorf("failCode(other) = %d, want %d", got, ExitFailure)
	}
}
