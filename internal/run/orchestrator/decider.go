package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// The engine decider (the story's decider:). When a turn comes to rest at
// a decision gate that owes an autonomous decision, the session asks the
// judge which of the gate's intents to take and takes a confident answer
// that names one; any other answer (uncertain, below the threshold, not a
// candidate, a failed call) leaves the gate to the operator. Each decision
// is a turn.routed event of tier "decider". The loop is bounded, as a judge
// that keeps choosing intents that lead to gates could otherwise run on.

// TierDecider is the turn.routed tier of an engine decision.
const TierDecider = "decider"

// maxDecisions bounds the decisions one turn makes.
const maxDecisions = 8

// gateOwesDecision reports whether the judge decides at state st: the
// room pins decider: llm, or pins nothing and the run is one_shot.
func (s *Session) gateOwesDecision(st *story.State) bool {
	if st == nil {
		return false
	}
	switch st.Decider {
	case story.DeciderHuman:
		return false
	case story.DeciderLLM:
		return true
	}
	return s.execMode != ModeStaged
}

// decisionCandidates are the intents the judge may choose at the current
// state: allowed, listed, taking no required slot, with an arm that would
// be taken now and that leaves the state for another one (not an exit).
func (s *Session) decisionCandidates(t *turnCtx) []story.DeciderCandidate {
	var out []story.DeciderCandidate
	for _, name := range s.MenuIntents() {
		def := s.intentDef(name)
		c := story.DeciderCandidate{Name: name}
		if def != nil {
			if def.Hidden || slices.ContainsFunc(def.SlotOrder, func(n string) bool { return def.Slots[n].Required }) {
				continue
			}
			c.Title, c.Description = def.Title, def.Description
		}
		saved := t.slots
		t.slots = map[string]any{}
		env := s.env(t)
		arm, rej, err := s.pickArm(t, name, env)
		t.slots = saved
		if err != nil || rej != nil || arm == nil || arm.Stay {
			continue
		}
		to := arm.Target
		if arm.TargetTemplate != nil {
			to = s.destinationHint(arm, env)
		}
		if to == "" || to == s.state || strings.HasPrefix(to, story.ExitStatePrefix) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// engineDecide runs the engine decider while the turn rests at a gate that owes
// a decision.
func (s *Session) engineDecide(ctx context.Context, t *turnCtx) error {
	d := s.story.Decider
	if d == nil {
		return nil
	}
	for range maxDecisions {
		st := s.focus()
		if !s.gateOwesDecision(st) {
			return nil
		}
		cands := s.decisionCandidates(t)
		if len(cands) < 2 {
			return nil // nothing to choose between
		}
		choice, conf, reason, err := s.askJudge(ctx, t, d, st, cands)
		if err != nil {
			return err
		}
		routed := trace.TurnRouted{Tier: TierDecider, Input: s.state, Intent: choice, Confidence: conf, Reason: reason}
		if choice == "" {
			return s.emit(t, routed) // bailed to the operator
		}
		if err := s.emit(t, routed); err != nil {
			return err
		}
		t.emits = append(t.emits, emitCapture{intent: choice, slots: map[string]any{}})
		if err := s.fireEmits(t, 0); err != nil {
			return err
		}
		if err := s.dispatchAll(ctx, t); err != nil {
			return err
		}
	}
	return s.emit(t, trace.TurnRouted{Tier: TierDecider, Input: s.state,
		Reason: fmt.Sprintf("the decider made %d decisions this turn; the gate waits for the operator", maxDecisions)})
}

// askJudge asks the judge at a gate. choice is the intent to take, "" to
// leave the gate to the operator (reason says why).
func (s *Session) askJudge(ctx context.Context, t *turnCtx, d *story.Decider, st *story.State, cands []story.DeciderCandidate) (choice string, conf float64, reason string, err error) {
	payload := make([]any, len(cands))
	names := make([]string, len(cands))
	for i, c := range cands {
		payload[i] = map[string]any{"name": c.Name, "title": c.Title, "description": c.Description}
		names[i] = c.Name
	}
	args := map[string]any{"agent": d.Agent, "schema": d.Schema, "state": s.state, "candidates": payload}
	if d.Prompt != "" {
		args["prompt_path"] = d.Prompt
	} else {
		args["prompt"] = story.DeciderPrompt(st, cands)
	}
	if err := s.emit(t, trace.HarnessDispatched{Namespace: d.Invoke.Name, Args: args}); err != nil {
		return "", 0, "", err
	}
	world := s.lendWorld()
	res, derr := s.host.Dispatch(ctx, &host.Call{Namespace: d.Invoke.Name, Args: args, Invoke: d.Invoke,
		SessionID: s.id, Turn: t.n, State: s.state, TurnState: t.start, World: world,
		Run: host.RunEnv{Live: s.liveFor(world), TitleOwned: s.TitleOwned()}})
	if derr != nil && isTraceErr(derr) {
		return "", 0, "", derr
	}
	var data map[string]any
	callErr := derr
	if derr == nil && res != nil {
		data, callErr = res.Data, res.Err
	}
	returned := trace.HarnessReturned{Namespace: d.Invoke.Name, Data: data}
	if callErr != nil {
		returned.Error = callErr.Error()
	}
	if err := s.emit(t, returned); err != nil {
		return "", 0, "", err
	}
	if callErr != nil {
		return "", 0, "the judge failed: " + callErr.Error(), nil
	}
	v, _ := data["submitted"].(map[string]any)
	intent, _ := v["intent"].(string)
	verdict, _ := v["verdict"].(string)
	conf, _ = number.Float(v["confidence"])
	why, _ := v["reason"].(string)
	switch {
	case intent == "" || intent == "uncertain" || verdict == "uncertain":
		return "", conf, "the judge is uncertain" + suffix(why), nil
	case conf < d.Threshold:
		return "", conf, fmt.Sprintf("the judge chose %s at confidence %.2f, under %.2f", intent, conf, d.Threshold), nil
	case !slices.Contains(names, intent):
		return "", conf, fmt.Sprintf("the judge chose %q, which is not one of %s", intent, strings.Join(names, ", ")), nil
	}
	return intent, conf, why, nil
}

func suffix(why string) string {
	if why == "" {
		return ""
	}
	return ": " + why
}
