package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// Operator answers questions an agent asks the person running the story
// (kitsoki run prompts on its terminal).
type Operator func(ctx context.Context, question string) (string, error)

// WithOperator sets who answers agents' questions. Without one, questions
// fail with ErrNoOperator.
func WithOperator(op Operator) Option { return func(s *Session) { s.operator = op } }

// WithTitle gives the run a title from whoever started it (an operator, or
// the caller of create_task_kitsoki). Such a title is not agent-owned:
// agents are no longer offered the title tool (see TitleOwned). A blank
// title leaves the run untitled.
func WithTitle(title string) Option {
	return func(s *Session) {
		if t := strings.TrimSpace(title); t != "" {
			s.live.title, s.live.titleFixed = t, true
		}
	}
}

// Errors a live call's actions can return.
var (
	ErrNoOperator = errors.New("no operator can answer: this run is not interactive")
	ErrNoParent   = errors.New("this run has no parent run")
	ErrTitleFixed = errors.New("this run's title was given by whoever started it; agents may not change it")
)

// Live is what one in-flight agent call may do to its run, through the
// tools of kitsoki's MCP server. Actions run on the tool's goroutine while
// the session waits for the call, so they only touch state guarded here;
// queued intents fire once the call has settled.
type Live struct {
	s     *Session
	world map[string]any
}

// LiveCall returns the run actions for an agent call being dispatched. It
// implements toolserver.LiveCall (and host.LiveActions). The session hands one to
// every call it dispatches (host.Call.Run).
func (s *Session) LiveCall(call *host.Call) *Live { return s.liveFor(call.World) }

// liveFor returns the run actions of a call dispatched with world.
func (s *Session) liveFor(world map[string]any) *Live { return &Live{s: s, world: world} }

var _ host.LiveActions = (*Live)(nil)

// liveState is the part of a session live calls write to.
type liveState struct {
	mu    sync.Mutex
	title string
	// titleFixed is set when the title came from whoever started the
	// run rather than from an agent.
	titleFixed bool
	steps      []string
	pending    []emitCapture
}

func (l *Live) World() map[string]any { return l.world }

func (l *Live) AskOperator(ctx context.Context, question string) (string, error) {
	if l.s.operator == nil {
		return "", ErrNoOperator
	}
	return l.s.operator(ctx, question)
}

func (l *Live) AskParent(context.Context, string) (string, error) { return "", ErrNoParent }

func (l *Live) SetTitle(_ context.Context, title string) error {
	title = strings.TrimSpace(title)
	if title == "" {
		return errors.New("the title is empty")
	}
	l.s.live.mu.Lock()
	defer l.s.live.mu.Unlock()
	if l.s.live.titleFixed {
		return ErrTitleFixed
	}
	l.s.live.title = title
	return nil
}

func (l *Live) CompleteStep(_ context.Context, summary string) error {
	l.s.live.mu.Lock()
	l.s.live.steps = append(l.s.live.steps, summary)
	l.s.live.mu.Unlock()
	return nil
}

func (l *Live) EmitIntent(_ context.Context, name string, slots map[string]any) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return errors.New("the intent name is empty")
	}
	l.s.live.mu.Lock()
	defer l.s.live.mu.Unlock()
	l.s.live.pending = append(l.s.live.pending, emitCapture{intent: name, slots: copySlots(slots)})
	return nil
}

// Title returns the run's title ("" when unset).
func (s *Session) Title() string {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	return s.live.title
}

// TitleOwned reports whether agents may set the run's title: while it is
// unset or was set by an agent, not once whoever started the run gave it
// one (WithTitle). It decides the task-title capability of the run's agent
// calls.
func (s *Session) TitleOwned() bool {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	return !s.live.titleFixed
}

// Steps returns the step summaries agents reported, in order.
func (s *Session) Steps() []string {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	return append([]string(nil), s.live.steps...)
}

// takePending moves intents agents emitted during a call into the turn, to
// fire as internal intents once the call has settled.
func (s *Session) takePending(t *turnCtx) error {
	s.live.mu.Lock()
	p := s.live.pending
	s.live.pending = nil
	s.live.mu.Unlock()
	if len(p) == 0 {
		return nil
	}
	for i := range p {
		// inside an import, the imported story's own intent names
		p[i].intent = s.story.ResolveIntent(s.state, p[i].intent)
	}
	t.emits = append(t.emits, p...)
	if err := s.fireEmits(t, 0); err != nil {
		return fmt.Errorf("intent emitted by an agent: %w", err)
	}
	return nil
}
