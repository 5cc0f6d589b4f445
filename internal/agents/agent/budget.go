package agent

import (
	"fmt"
	"sync"
)

// Budget is a spending cap shared by the agent calls it covers: a run's
// --max-cost, or one profile's quota:. The host checks it before every
// call and charges each answer's cost to it; a transport that makes
// several requests for one call (a tool loop) checks it between them with
// what the call has cost so far. A nil *Budget is no cap. A Budget is safe
// for concurrent use.
type Budget struct {
	// Scope names the cap in messages: "--max-cost", "profile fast's
	// quota".
	Scope string
	// Fix says how to lift the cap, e.g. "raise --max-cost".
	Fix string

	maxCost  float64
	maxCalls int

	mu    sync.Mutex
	spent float64
	calls int
}

// NewBudget returns a cap of maxCost dollars (0: none) and maxCalls calls
// (0: none) under scope.
func NewBudget(scope, fix string, maxCost float64, maxCalls int) *Budget {
	return &Budget{Scope: scope, Fix: fix, maxCost: maxCost, maxCalls: maxCalls}
}

// Check reports whether a call may go on, having cost running dollars so
// far: a *CostCapError once what was charged plus running reaches the
// cost cap (a cap of 0 is no cap). Before a call (running 0) it also
// refuses once the call cap is used up.
func (b *Budget) Check(running float64) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.maxCost > 0 && b.spent+running >= b.maxCost {
		return &CostCapError{Scope: b.Scope, Fix: b.Fix, Cap: b.maxCost, Spent: b.spent + running, Calls: b.calls, InFlight: running > 0}
	}
	if running == 0 && b.maxCalls > 0 && b.calls >= b.maxCalls {
		return &CostCapError{Scope: b.Scope, Fix: b.Fix, MaxCalls: b.maxCalls, Spent: b.spent, Calls: b.calls}
	}
	return nil
}

// Charge records one call that cost usd dollars.
func (b *Budget) Charge(usd float64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.spent += usd
	b.calls++
	b.mu.Unlock()
}

// Spent reports the dollars charged and the calls counted so far.
func (b *Budget) Spent() (usd float64, calls int) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent, b.calls
}

// CostCapError says a spending cap was reached. It stops the run: no
// on_error handles it (StopsRun).
type CostCapError struct {
	Scope string
	Fix   string
	// Cap is the dollar cap reached; MaxCalls the call cap (one of the
	// two is set).
	Cap      float64
	MaxCalls int
	Spent    float64
	Calls    int
	// InFlight is set when the cap was reached inside a call (between
	// the requests of a tool loop): Spent counts that call too.
	InFlight bool
}

func (e *CostCapError) Error() string {
	fix := ""
	if e.Fix != "" {
		fix = "; " + e.Fix + " to go on"
	}
	if e.MaxCalls > 0 {
		return fmt.Sprintf("cost cap reached: %s allows %d agent calls and %d were made ($%.4f)%s", e.Scope, e.MaxCalls, e.Calls, e.Spent, fix)
	}
	calls := plural(e.Calls, "call")
	if e.InFlight {
		calls = plural(e.Calls, "finished call") + " and the one in flight"
	}
	return fmt.Sprintf("cost cap reached: %s is $%.4f and this run's agent calls have cost $%.4f (%s)%s", e.Scope, e.Cap, e.Spent, calls, fix)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// StopsRun marks the error as one that ends the run rather than the
// call: the orchestrator stops the turn instead of running on_error.
func (e *CostCapError) StopsRun() bool { return true }

// CheckCost checks every budget of the call with what it has cost so far
// (running dollars): the first cap reached, nil when none is.
func (c *Call) CheckCost(running float64) error {
	for _, b := range c.Budgets {
		if err := b.Check(running); err != nil {
			return err
		}
	}
	return nil
}
