package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// turnCtx is the scratch state of one turn.
type turnCtx struct {
	n int64
	// start is the state the session was in when the turn began; the
	// calls of the turn carry it (host.Call.TurnState) for cassette phases.
	start   string
	intent  string
	slots   map[string]any
	queue   []*queued
	emits   []emitCapture
	says    []string
	errs    []error
	handled []HandledError
	// targets are the target: effects of an on_complete chain, tried in
	// order once the chain's calls are dispatched (after).
	targets []*story.Effect
	// after runs once the turn's calls are dispatched (a job's
	// completion takes its target: there); its calls are dispatched too.
	after func() error
	// armView is the view: of the last arm taken this turn (nil when it
	// had none): shown instead of the state's view at turn end.
	armView *story.Arm
	// scope holds the parts of the expression scope built once per turn
	// (Session.env).
	scope turnScope
	// batchCost is the agent spend of the dispatch batch running.
	batchCost float64
	events    []regionEvent // emit: events waiting for the sibling regions
	src       string        // inside a parallel state: the leaf (or nested parallel state) whose arm runs ("" for the whole configuration)
	// delivering is set while broadcast drains events, so a transition it
	// takes queues its done events instead of draining them again.
	delivering bool
	// decisions are the arms taken and calls queued, for the journal
	// (WithJournal).
	decisions []trace.Decision
	// noSettle skips the post-bind emit_intent passes: a background job's
	// completion turn runs its effects and dispatches their calls, but
	// does not re-evaluate the entered state's emit_intent guards against
	// the binds (Kitsoki's completion handler has no settle pass either);
	// the next user turn in that state does.
	noSettle bool
}

func (s *Session) newTurn(n int64, intent string, slots map[string]any) *turnCtx {
	if slots == nil {
		slots = map[string]any{}
	}
	return &turnCtx{n: n, intent: intent, slots: slots, start: s.state}
}

// faultError is an expression or effect fault that aborts a turn.
type faultError struct{ err error }

func (f *faultError) Error() string { return f.err.Error() }
func (f *faultError) Unwrap() error { return f.err }

func fault(format string, args ...any) error { return &faultError{fmt.Errorf(format, args...)} }

// Turn takes one user turn: intent plus slots. input is the typed text, if
// any ("" for a direct intent). Rejections and faults are outcomes, not
// errors; an error means the trace could not be written.
func (s *Session) Turn(ctx context.Context, intent string, slots map[string]any, input string) (*Outcome, error) {
	if !s.started {
		return nil, fmt.Errorf("session not started: call Start first")
	}
	if len(s.timers) > 0 {
		// Timeouts due by now fire first, each as its own turn.
		if _, err := s.Tick(ctx); err != nil {
			return nil, err
		}
	}
	// What background jobs did since the last turn comes first, each in
	// a turn of its own.
	background, err := s.Deliver(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.userTurn(ctx, intent, slots, input)
	if out != nil {
		out.Background = background
	}
	return out, err
}

func (s *Session) userTurn(ctx context.Context, intent string, slots map[string]any, input string) (*Outcome, error) {
	s.turn++
	t := s.newTurn(s.turn, intent, copySlots(slots))
	if input == "" {
		input = "[intent] " + intent
	}
	if err := s.emit(t, trace.TurnInput{Input: input, Intent: intent}); err != nil {
		return nil, err
	}
	if err := s.emit(t, trace.TurnStart{Turn: t.n, Input: input, Direct: true}); err != nil {
		return nil, err
	}
	if err := s.beginTurnWorld(ctx, t); err != nil {
		return nil, err
	}
	return s.takeTurn(ctx, t)
}

// takeTurn validates the turn's intent and slots, picks the arm and runs
// the turn (steps 1-9); a typed intent and a routed free-text line both
// end here.
func (s *Session) takeTurn(ctx context.Context, t *turnCtx) (*Outcome, error) {
	intent := t.intent
	if s.over != nil {
		return s.reject(t, &Rejection{Code: CodeOverlayOpen,
			Message: fmt.Sprintf("the story is paused while %s is open; type %s to return to it", s.over.def.Name, s.over.def.Exit)})
	}
	if rej := s.validate(t); rej != nil {
		return s.reject(t, rej)
	}
	arm, rej, err := s.pickArm(t, intent, s.env(t))
	if err != nil {
		out, werr := s.abort(t, err)
		if werr != nil {
			return nil, werr
		}
		return out, s.endTurn(t)
	}
	if rej != nil {
		return s.reject(t, rej)
	}
	if err := s.emit(t, trace.MachineIntentAccepted{Intent: intent, Slots: t.slots}); err != nil {
		return nil, err
	}
	out, err := s.runTurn(ctx, t, func() error { return s.take(t, arm, intent) })
	if err != nil {
		return nil, err
	}
	return out, s.endTurn(t)
}

func copySlots(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// runTurn runs a turn's chain (steps 3–6), dispatches its calls with the
// post-bind passes (7–8), renders the view and writes turn.end (9).
func (s *Session) runTurn(ctx context.Context, t *turnCtx, chain func() error) (*Outcome, error) {
	from := s.state
	if err := chain(); err != nil {
		return s.abort(t, err)
	}
	if err := s.fireEmits(t, 0); err != nil {
		return s.abort(t, err)
	}
	if err := s.dispatchAll(ctx, t); err != nil {
		return s.abort(t, err)
	}
	if after := t.after; after != nil {
		t.after = nil
		if err := after(); err != nil {
			return s.abort(t, err)
		}
		if err := s.fireEmits(t, 0); err != nil {
			return s.abort(t, err)
		}
		if err := s.dispatchAll(ctx, t); err != nil {
			return s.abort(t, err)
		}
	}
	if err := s.engineDecide(ctx, t); err != nil {
		return s.abort(t, err)
	}
	// One view is rendered: the arm's when it has one, else the state's.
	var view string
	var err error
	switch {
	case t.armView != nil && t.armView.View != nil:
		view, err = t.armView.View.Render(s.stateEnv(t))
	case t.armView != nil && t.armView.ViewDoc != nil:
		view, err = viewText(t.armView.ViewDoc, s.stateEnv(t))
	default:
		view, err = s.View()
	}
	if err != nil {
		return s.abort(t, fault("view of state %q: %w", s.state, err))
	}
	view = withErrorBanner(view, t.handled)
	payload := trace.TurnEnd{Outcome: OutcomeTransitioned, To: s.state}
	if view != "" {
		payload.View = stripANSI(view)
	}
	if t.n > 0 {
		if err := s.emit(t, payload); err != nil {
			return nil, err
		}
	}
	done, exit := s.Done()
	return &Outcome{Outcome: OutcomeTransitioned, From: from, State: s.state, View: view, Says: t.says, HostErrors: t.errs, Handled: t.handled, Done: done, Exit: exit}, nil
}

// abort records a fault: machine.error then turn.end {outcome: error}. A
// trace failure is returned as is.
func (s *Session) abort(t *turnCtx, err error) (*Outcome, error) {
	var f *faultError
	if !errors.As(err, &f) {
		return nil, err // not a fault: the trace itself failed
	}
	msg := err.Error()
	if e := s.emit(t, trace.MachineError{Intent: t.intent, Slots: t.slots, State: s.state, Error: msg}); e != nil {
		return nil, e
	}
	if t.n > 0 {
		if e := s.emit(t, trace.TurnEnd{Outcome: OutcomeError, Error: msg}); e != nil {
			return nil, e
		}
	}
	done, exit := s.Done()
	return &Outcome{Outcome: OutcomeError, State: s.state, Err: err, Says: t.says, HostErrors: t.errs, Handled: t.handled, Done: done, Exit: exit}, nil
}

// reject records a rejected intent; nothing else changes.
func (s *Session) reject(t *turnCtx, rej *Rejection) (*Outcome, error) {
	payload := trace.MachineValidationFailed{Code: rej.Code, Message: rej.Message, Intent: t.intent, State: s.state, GuardHint: rej.GuardHint}
	if err := s.emit(t, payload); err != nil {
		return nil, err
	}
	if err := s.emit(t, trace.TurnEnd{Outcome: OutcomeRejected, Code: rej.Code}); err != nil {
		return nil, err
	}
	return &Outcome{Outcome: OutcomeRejected, From: s.state, State: s.state, Rejection: rej}, s.endTurn(t)
}

// ancestors returns the state and its ancestors, innermost first.
func (s *Session) ancestors(path string) []*story.State {
	var out []*story.State
	for p := path; p != ""; {
		st := s.story.States[p]
		if st == nil {
			break
		}
		out = append(out, st)
		p = st.Parent
	}
	return out
}

// armsFor finds the arms that handle intent: at the first state (walking
// up from the current one) with arms for it, else with "*" arms.
func (s *Session) armsFor(intent string) ([]*story.Arm, *story.State) {
	if story.IsDoneEvent(intent) {
		return nil, nil // the runtime raises done events; no turn sends one
	}
	for _, st := range s.scopes() {
		if arms, ok := st.On[intent]; ok {
			return arms, st
		}
		if arms, ok := st.On["*"]; ok {
			return arms, st
		}
	}
	return nil, nil
}

// pickArm chooses the transition for intent: a default arm wins when
// reached, an arm without when wins, else the first true when. None is
// GUARD_FAILED; a guard error aborts the turn.
func (s *Session) pickArm(t *turnCtx, intent string, env map[string]any) (*story.Arm, *Rejection, error) {
	arms, st := s.armsFor(intent)
	hint := ""
	for i, a := range arms {
		if a.Default || a.When == nil {
			return a, nil, nil
		}
		ok, err := a.When.Eval(env)
		if err != nil {
			key := intent
			if _, ok := st.On[intent]; !ok {
				key = "*"
			}
			return nil, nil, fault("guard error in state %s, arm %d of on.%s (%s): when %q: %w", st.Name, i, key, a.WhenPos, a.When.Source(), err)
		}
		if ok {
			return a, nil, nil
		}
		if hint == "" {
			hint = a.GuardHint
		}
	}
	return nil, &Rejection{Code: CodeGuardFailed, Message: fmt.Sprintf("no transition matched for intent %q in state %q", intent, s.state), GuardHint: hint}, nil
}

// validate checks an intent and its slots against the current state
// (story-format.md §6) and fills slot defaults.
func (s *Session) validate(t *turnCtx) *Rejection {
	intent := t.intent
	arms, _ := s.armsFor(intent)
	def := s.intentDef(intent)
	if arms == nil {
		allowed := s.AllowedIntents()
		if def == nil {
			// The spec's rule (1): no arms is INTENT_NOT_ALLOWED_IN_STATE,
			// declared or not; an undeclared name also gets a suggestion.
			rej := &Rejection{Code: CodeIntentNotAllowed, AllowedIntents: allowed,
				Message: fmt.Sprintf("intent %q is not allowed in state %q: it is not a declared intent (allowed: %s)", intent, s.state, strings.Join(allowed, ", "))}
			if sug := suggest(intent, s.knownIntents()); sug != "" {
				rej.Suggestions = []string{sug}
				rej.Message += fmt.Sprintf(" (did you mean %q?)", sug)
			}
			return rej
		}
		return &Rejection{Code: CodeIntentNotAllowed,
			Message:        fmt.Sprintf("intent %q is not allowed in state %q (allowed: %s)", intent, s.state, strings.Join(allowed, ", ")),
			AllowedIntents: allowed}
	}
	if def == nil {
		return nil
	}
	rej, undeclared := unknownSlot(def, t.slots)
	if rej != nil {
		return rej
	}
	if len(undeclared) > 0 {
		declared := "it declares no slots"
		if len(def.Slots) > 0 {
			declared = "declared slots: " + strings.Join(slices.Sorted(maps.Keys(def.Slots)), ", ")
		}
		s.logger.Warn("intent takes slots it does not declare", "intent", def.Name, "state", s.state,
			"undeclared", strings.Join(undeclared, ", "), "hint", declared+"; add them to the intent's slots: to type and validate them")
	}
	var missing []string
	for _, name := range def.SlotOrder {
		sl := def.Slots[name]
		v, present := t.slots[name]
		if !present || v == nil {
			if sl.Required {
				missing = append(missing, name)
				continue
			}
			if sl.HasDefault {
				t.slots[name] = DeepCopy(sl.Default)
			}
			continue
		}
		if len(sl.Values) > 0 && !containsString(sl.Values, fmt.Sprint(v)) {
			if str, ok := v.(string); ok {
				if cv, ok := sl.Canonical(str); ok { // another spelling, or a synonym
					t.slots[name] = cv
					continue
				}
			}
			return &Rejection{Code: CodeInvalidSlotValue,
				Message: fmt.Sprintf("slot %q of intent %q: %q is not one of %s", name, intent, fmt.Sprint(v), joinValues(sl.Values))}
		}
		if sl.Format != "" {
			if err := schema.CheckFormat(sl.Format, t.slots[name]); err != nil {
				return &Rejection{Code: CodeInvalidSlotValue,
					Message: fmt.Sprintf("slot %q of intent %q: %v (its format is %s)", name, intent, err, sl.Format)}
			}
		}
		if sl.Validator != nil {
			env := s.env(t)
			env[expr.ValueRoot] = v
			ok, err := sl.Validator.Eval(env)
			switch {
			case err != nil:
				return &Rejection{Code: CodeInvalidSlotValue,
					Message: fmt.Sprintf("slot %q of intent %q: its validator %q (%s) failed: %v", name, intent, sl.Validator.Source(), sl.ValidatorPos, err)}
			case !ok:
				return &Rejection{Code: CodeInvalidSlotValue,
					Message: fmt.Sprintf("slot %q of intent %q: %s is rejected by its validator %q", name, intent, showValue(v), sl.Validator.Source())}
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		msg := fmt.Sprintf("intent %q is missing required slots: %s", intent, strings.Join(missing, ", "))
		var asks []string
		for _, name := range missing {
			if p := def.Slots[name].Prompt; p != "" { // the slot's own question
				asks = append(asks, name+": "+p)
			}
		}
		if len(asks) > 0 {
			msg += " (" + strings.Join(asks, "; ") + ")"
		}
		return &Rejection{Code: CodeMissingSlots, Message: msg, MissingSlots: missing}
	}
	return nil
}

// unknownSlot handles the slots the intent does not declare. One that is a
// near miss of a declared slot (a typo: "sise" for "size") is rejected, the first by name, with the declared name
// suggested. Any other undeclared slot is accepted, as Kitsoki accepts it
// (its flows send slots their intents do not declare), and returned in
// undeclared (sorted) for the caller's warning.
func unknownSlot(def *story.Intent, slots map[string]any) (rej *Rejection, undeclared []string) {
	names := make([]string, 0, len(slots))
	for k := range slots {
		if def.Slots[k] == nil {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	sort.Strings(names)
	declared := slices.Sorted(maps.Keys(def.Slots))
	for _, name := range names {
		if sug := suggest(name, declared); sug != "" {
			return &Rejection{Code: CodeUnknownSlot, Suggestions: []string{sug},
				Message: fmt.Sprintf("unknown slot %q for intent %s; did you mean %q?", name, def.Name, sug)}, nil
		}
	}
	return nil, names
}

// intentDef returns the intent's definition: a state-local one (current
// state or an ancestor) shadows the global one.
func (s *Session) intentDef(name string) *story.Intent {
	for _, st := range s.scopes() {
		if in, ok := st.Intents[name]; ok {
			return in
		}
	}
	return s.story.Intents[name]
}

// IntentDef returns the definition of an intent as seen from the current
// state, or nil.
func (s *Session) IntentDef(name string) *story.Intent { return s.intentDef(name) }

// AllowedIntents lists the intents the current state (or an ancestor) has
// arms for, sorted; "*" is left out.
func (s *Session) AllowedIntents() []string {
	seen := map[string]bool{}
	for _, st := range s.scopes() {
		for k := range st.On {
			if k != "*" && !story.IsDoneEvent(k) {
				seen[k] = true
			}
		}
	}
	return sortedKeys(seen)
}

func (s *Session) knownIntents() []string {
	seen := map[string]bool{}
	for k := range s.story.Intents {
		seen[k] = true
	}
	for _, st := range s.story.States {
		for k := range st.On {
			if k != "*" {
				seen[k] = true
			}
		}
	}
	return sortedKeys(seen)
}

func containsString(vals []any, s string) bool {
	for _, v := range vals {
		if fmt.Sprint(v) == s {
			return true
		}
	}
	return false
}

func joinValues(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

// suggest returns the closest candidate within a small edit distance.
func suggest(word string, candidates []string) string {
	return nearmiss.Closest(word, candidates, len(word)/2+1)
}

// stripANSI removes terminal escape sequences from a rendered view.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ErrorBanner is the line a turn's view gets for each failed call an
// on_error: redirect handled, so the failure is never silent: the room it
// lands in may not mention it. The text is Kitsoki's. A background job's
// failure is reported by its inbox notice instead.
const ErrorBanner = "⚠ Action failed: "

// withErrorBanner appends the banner of each handled failure to view (each
// message once).
func withErrorBanner(view string, handled []HandledError) string {
	if len(handled) == 0 {
		return view
	}
	var lines []string
	for _, h := range handled {
		if h.Err == nil || h.Background {
			continue
		}
		line := ErrorBanner + h.Err.Error()
		if !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return view
	}
	if view == "" {
		return strings.Join(lines, "\n")
	}
	return view + "\n\n" + strings.Join(lines, "\n")
}
