package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// EmitIntentSignal is the signal an agent's emit_intent sends to its
// session workflow.
const EmitIntentSignal = "emit_intent"

// EmitSignal is one intent an agent emitted during a call: which attempt
// of which activity sent it, its place among that attempt's emits, and the
// intent with its slots (the story's secrets masked).
type EmitSignal struct {
	ActivityID string `json:"activity_id"`
	Attempt    int32  `json:"attempt"`
	N          int    `json:"n"`
	Intent     string `json:"intent"`
	Slots      Value  `json:"slots"`
}

// Signaller sends an emit signal to a session workflow; the default is
// the activity's own client (activity.GetClient).
type Signaller func(ctx context.Context, workflowID, runID string, s EmitSignal) error

func clientSignaller(ctx context.Context, workflowID, runID string, s EmitSignal) error {
	return activity.GetClient(ctx).SignalWorkflow(ctx, workflowID, runID, EmitIntentSignal, s)
}

// ErrNotInCluster is the refusal of the run actions a call on a worker
// cannot take on a session that lives in a workflow.
var ErrNotInCluster = errors.New("not available to an agent call of a Temporal session yet")

// remoteLive is the run actions of a call answered on a worker: the world
// the call was sent with, and emit_intent as a signal to the session.
// Asking the operator, setting the title and completing a step act on
// state the workflow holds and are refused.
type remoteLive struct {
	world  map[string]any
	info   activity.Info
	signal Signaller
	mask   *secret.Masker

	mu   sync.Mutex
	sent int
}

var _ host.LiveActions = (*remoteLive)(nil)

func (l *remoteLive) World() map[string]any { return l.world }

func (l *remoteLive) AskOperator(context.Context, string) (string, error) {
	return "", fmt.Errorf("ask the operator: %w", ErrNotInCluster)
}

func (l *remoteLive) AskParent(context.Context, string) (string, error) {
	return "", orchestrator.ErrNoParent
}

func (l *remoteLive) SetTitle(context.Context, string) error {
	return fmt.Errorf("set the title: %w", ErrNotInCluster)
}

func (l *remoteLive) CompleteStep(context.Context, string) error {
	return fmt.Errorf("complete a step: %w", ErrNotInCluster)
}

// EmitIntent signals the session workflow, which queues the intent to
// fire once this call has settled, as a local run does.
func (l *remoteLive) EmitIntent(ctx context.Context, name string, slots map[string]any) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return errors.New("the intent name is empty")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := EmitSignal{ActivityID: l.info.ActivityID, Attempt: l.info.Attempt, N: l.sent, Intent: name}
	if slots != nil {
		s.Slots = Value{l.mask.Value(slots)}
	}
	we := l.info.WorkflowExecution
	if err := l.signal(ctx, we.ID, we.RunID, s); err != nil {
		return fmt.Errorf("emit_intent %s: signal the session workflow %s: %w", name, we.ID, err)
	}
	l.sent++
	return nil
}

func (l *remoteLive) emitted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

// takeEmits receives the emit signals the call's activity attempt sent
// (out.Emitted of them; each was recorded in history before the
// activity's completion, so they are there to receive) and queues them on
// the session through the call's own run actions, in the order they were
// sent. Signals of another activity or attempt (an attempt lost with its
// worker) are dropped.
func (d *activityDispatcher) takeEmits(c *host.Call, out *InvokeResult) error {
	if out.Emitted == 0 {
		return nil
	}
	if c.Run.Live == nil {
		return fmt.Errorf("%s: the call emitted %d intent(s) but has no run to queue them on", c.Namespace, out.Emitted)
	}
	ch := workflow.GetSignalChannel(*d.cur, EmitIntentSignal)
	for got := 0; got < out.Emitted; {
		var s EmitSignal
		ch.Receive(*d.cur, &s)
		if s.ActivityID != out.ActivityID || s.Attempt != out.Attempt || s.N != got {
			workflow.GetLogger(*d.cur).Warn("emit_intent signal of another call attempt dropped",
				"activity_id", s.ActivityID, "attempt", s.Attempt, "intent", s.Intent)
			continue
		}
		if err := c.Run.Live.EmitIntent(context.Background(), s.Intent, s.Slots.Map()); err != nil {
			return fmt.Errorf("%s: emit_intent %s: %w", c.Namespace, s.Intent, err)
		}
		got++
	}
	return nil
}
