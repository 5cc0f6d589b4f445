package orchestrator

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// emitCapture is an emit_intent captured while a chain ran, fired after it.
type emitCapture struct {
	intent string
	slots  map[string]any
}

// take performs a chosen transition: machine.transition, the arm's effects,
// then (unless the target is ".") the exits and entries with their on_enter.
// A templated target is rendered first, against the world and slots the
// arm's when: saw.
func (s *Session) take(t *turnCtx, arm *story.Arm, intent string) error {
	to, stay := arm.Target, arm.Stay
	if arm.TargetTemplate != nil {
		var err error
		if to, stay, err = s.renderTarget(t, arm, intent); err != nil {
			return err
		}
	}
	if stay {
		to = s.state
	}
	s.decide(t, arm.Index, intent, to)
	if err := s.emit(t, trace.MachineTransition{From: s.state, To: to, Intent: intent, Slots: t.slots}); err != nil {
		return err
	}
	if s.inParallel() {
		_, owner := s.armsFor(intent)
		t.src = s.sourceOf(owner)
	}
	err := s.runEffects(t, arm.Effects, "arm "+intent)
	if err == nil && arm.Emit != nil {
		err = s.captureTree(t, arm.Emit, fmt.Sprintf("arm %d of on.%s", arm.Index, intent))
	}
	t.src = ""
	if err != nil {
		return err
	}
	t.armView = arm
	if !stay {
		if to != s.state && !arm.NoHistory {
			s.push(s.state)
		}
		if err := s.transition(t, to); err != nil {
			return err
		}
	}
	if len(t.events) == 0 {
		return nil
	}
	return s.broadcast(t)
}

// renderTarget renders an arm's templated target and resolves it to a
// state; a render error or a text that names no state is a fault naming
// the state, the arm and where the target is.
func (s *Session) renderTarget(t *turnCtx, arm *story.Arm, intent string) (string, bool, error) {
	where := func() string {
		_, st := s.armsFor(intent)
		name, key := s.state, intent
		if st != nil {
			name = st.Name
			if _, ok := st.On[intent]; !ok {
				key = "*"
			}
		}
		return fmt.Sprintf("transition error in state %s, arm %d of on.%s (%s)", name, arm.Index, key, arm.TargetPos)
	}
	src := arm.TargetTemplate.Source()
	v, err := arm.TargetTemplate.Eval(s.env(t))
	if err != nil {
		return "", false, fault("%s: target %q: %w", where(), src, err)
	}
	text := ""
	if v != nil {
		text = fmt.Sprint(v)
	}
	from := s.state
	if s.inParallel() {
		_, owner := s.armsFor(intent)
		if from = s.sourceOf(owner); from == "" {
			from = s.focus().Name
		}
	}
	to, stay, err := s.story.ResolveTarget(from, text)
	if stay {
		to = s.state
	}
	if err != nil {
		return "", false, fault("%s: target %q rendered %q, %w", where(), src, text, err)
	}
	return to, stay, nil
}

// enterPath exits from the current state up to the common ancestor of from
// and to, then enters down to `to`, outermost first, running each entered
// state's on_enter; from == to re-enters the state. It sets the session's
// state and returns it as a configuration.
func (s *Session) enterPath(t *turnCtx, from, to string) (*story.Config, error) {
	fromChain := pathChain(s, from) // outermost first
	toChain := pathChain(s, to)
	common := 0
	if from != to {
		for common < len(fromChain) && common < len(toChain) && fromChain[common] == toChain[common] {
			common++
		}
	} else if len(toChain) > 0 {
		common = len(toChain) - 1
	}
	for i := len(fromChain) - 1; i >= common; i-- {
		s.state = fromChain[i]
		if err := s.emit(t, trace.MachineStateExited{State: fromChain[i]}); err != nil {
			return nil, err
		}
	}
	var final *story.Config
	var err error
	if common < len(toChain) {
		final, err = s.enterChain(t, toChain[common:], true)
	} else {
		final, err = s.descend(t, to, true)
	}
	if err != nil {
		return nil, err
	}
	s.setConfig(final)
	return final, nil
}

// pathChain lists the state paths from the outermost ancestor to path.
func pathChain(s *Session, path string) []string {
	if path == "" {
		return nil
	}
	anc := s.ancestors(path)
	out := make([]string, len(anc))
	for i, st := range anc {
		out[len(anc)-1-i] = st.Name
	}
	return out
}

// runEffects runs an effect chain. A false when skips an item; a guard or
// render fault aborts the chain (an emit_intent item's guard fault is left
// to the post-bind pass).
func (s *Session) runEffects(t *turnCtx, effects []*story.Effect, where string) error {
	for i, e := range effects {
		if e.Target != "" || e.TargetTemplate != nil { // on_complete only: tried once the chain has run
			t.targets = append(t.targets, e)
			continue
		}
		if e.When != nil {
			ok, err := e.When.Eval(s.env(t))
			if err != nil {
				if e.EmitIntent != nil && e.Set == nil && e.Increment == nil && e.Say == nil && e.Invoke == nil {
					continue
				}
				return fault("guard error in %s, effect %d (%s): when %q: %w", where, i, e.WhenPos, e.When.Source(), err)
			}
			if !ok {
				continue
			}
		}
		if err := s.runAction(t, e, where, i); err != nil {
			return err
		}
		if e.EmitIntent != nil {
			if err := s.capture(t, e, where, i); err != nil {
				return err
			}
		}
		if len(e.Effects) > 0 {
			if err := s.runEffects(t, e.Effects, fmt.Sprintf("%s, effect %d's effects", where, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// runAction runs the item's one action: set > increment > say > invoke.
func (s *Session) runAction(t *turnCtx, e *story.Effect, where string, i int) error {
	switch {
	case e.Set != nil:
		env := s.env(t)
		vals := make([]any, len(e.Set))
		for j, it := range e.Set { // render against the world from before the block
			v, err := it.Value.Eval(env)
			if err != nil {
				return fault("%s, effect %d: set %s: %w", where, i, it.Key, err)
			}
			vals[j] = v
		}
		for j, it := range e.Set {
			v := s.convert(it.Key, vals[j])
			s.setWorld(it.Key, v)
			if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{it.Key: v}}); err != nil {
				return err
			}
		}
	case e.Increment != nil:
		for _, it := range e.Increment {
			s.setWorld(it.Key, number.Increment(s.world[it.Key], it.By))
			if err := s.emit(t, trace.WorldUpdate{Increment: map[string]int64{it.Key: it.By}}); err != nil {
				return err
			}
		}
	case e.Say != nil:
		text, err := e.Say.Render(s.stateEnv(t))
		if err != nil {
			return fault("%s, effect %d: say: %w", where, i, err)
		}
		t.says = append(t.says, text)
		if err := s.emit(t, trace.MachineSay{Text: text}); err != nil {
			return err
		}
	case e.Invoke != nil:
		return s.enqueue(t, e.Invoke, where, i)
	case e.Emit != nil:
		return s.captureEvents(t, e, where, i)
	}
	return nil
}

// capture renders an emit_intent and keeps it for firing after the chain.
// An empty name after rendering is a no-op.
func (s *Session) capture(t *turnCtx, e *story.Effect, where string, i int) error {
	name, err := s.emitName(t, e)
	if err != nil {
		return fault("%s, effect %d: emit_intent: %w", where, i, err)
	}
	if name == "" {
		return nil
	}
	slots, err := s.emitSlots(t, e)
	if err != nil {
		return fault("%s, effect %d: emit_intent %s slots: %w", where, i, name, err)
	}
	t.emits = append(t.emits, emitCapture{intent: name, slots: slots})
	return nil
}

func (s *Session) emitName(t *turnCtx, e *story.Effect) (string, error) {
	v, err := e.EmitIntent.Eval(s.env(t))
	if err != nil {
		return "", err
	}
	if v == nil {
		return "", nil
	}
	return s.story.ResolveIntent(s.state, strings.TrimSpace(fmt.Sprint(v))), nil
}

func (s *Session) emitSlots(t *turnCtx, e *story.Effect) (map[string]any, error) {
	slots := make(map[string]any, len(e.EmitSlots))
	for k, tr := range e.EmitSlots {
		v, err := tr.Eval(s.env(t))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		slots[k] = v
	}
	return slots, nil
}

// fireEmits fires the captured emit_intents in order as internal intents on
// the current state (no slot validation). Nested emits recurse.
func (s *Session) fireEmits(t *turnCtx, depth int) error {
	for len(t.emits) > 0 {
		if depth >= MaxEmitDepth {
			return fault("emit_intent chain exceeded %d hops (last: %q); an on_enter emit_intent probably loops", MaxEmitDepth, t.emits[0].intent)
		}
		if st := s.story.States[s.state]; s.holds(st) {
			// The room waits for the operator: what it captured is dropped.
			s.logger.Debug("emit_intent chain held for the operator", "state", s.state, "intent", t.emits[0].intent,
				"mode", s.execMode, "decider", st.Decider)
			t.emits = nil
			return nil
		}
		e := t.emits[0]
		t.emits = t.emits[1:]
		if err := s.fireEmit(t, e); err != nil {
			return err
		}
		depth++
	}
	return nil
}

// fireEmit takes one internal intent.
func (s *Session) fireEmit(t *turnCtx, e emitCapture) error {
	saved := t.slots
	t.slots, t.intent = e.slots, e.intent
	defer func() { t.slots = saved }()
	arms, _ := s.armsFor(e.intent)
	if arms == nil {
		return fault("emit_intent %q: state %q has no arms for it", e.intent, s.state)
	}
	arm, rej, err := s.pickArm(t, e.intent, s.env(t))
	if err != nil {
		return err
	}
	if rej != nil {
		return fault("emit_intent %q: %s", e.intent, rej.Message)
	}
	return s.take(t, arm, e.intent)
}

// convert applies the world declaration's type to a set: value: a string
// becomes a bool, int or float when the key is declared so (§5).
func (s *Session) convert(key string, v any) any {
	str, ok := v.(string)
	if !ok {
		return v
	}
	var typ string
	for _, wv := range s.story.World {
		if wv.Name == key {
			typ = wv.Type
			break
		}
	}
	switch typ {
	case "bool":
		if b, err := strconv.ParseBool(strings.TrimSpace(str)); err == nil && (str == "true" || str == "false") {
			return b
		}
	case "int":
		if n, err := strconv.ParseInt(strings.TrimSpace(str), 10, 64); err == nil {
			return n
		}
	case "float":
		if f, err := strconv.ParseFloat(strings.TrimSpace(str), 64); err == nil {
			return f
		}
	}
	return v
}
