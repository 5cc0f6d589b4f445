package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// offRampState is the state whose agent_off_ramp answers unrouted free
// text: the first of the scopes with one.
func (s *Session) offRampState() *story.State {
	for _, st := range s.scopes() {
		if st.OffRamp != nil {
			return st
		}
	}
	return nil
}

// offRamp answers free text nothing routed with a host.agent.converse call
// (the off-ramp's persona, or its inline persona before the utterance).
// The machine does not move and the world is not written: the answer comes
// back in the outcome's Says, after the banner. A failed call leaves the
// turn rejected as NO_MATCH, with the failure in HostErrors.
func (s *Session) offRamp(ctx context.Context, t *turnCtx, r *story.OffRamp, text string) (*Outcome, error) {
	prompt := text
	if r.Persona != "" {
		prompt = r.Persona + "\n\n" + text
	}
	args := map[string]any{"prompt": prompt}
	if r.Agent != "" && r.Persona == "" {
		args["agent"] = r.Agent
	}
	answer, callErr, err := s.converse(ctx, t, r.Invoke, args)
	if err != nil {
		return nil, err
	}
	if callErr != nil {
		out, err := s.reject(t, &Rejection{Code: CodeNoMatch, AllowedIntents: s.AllowedIntents(),
			Message: fmt.Sprintf("could not tell what %q means here, and the agent off-ramp failed: %v", text, callErr)})
		if out != nil {
			out.HostErrors = append(out.HostErrors, callErr)
		}
		return out, err
	}
	out, err := s.stayWith(t, r.Banner, answer)
	if out != nil {
		out.OffRamp = true
	}
	return out, err
}

// stayWith ends a turn that did not move the machine: it says the lines
// (empty ones skipped), renders the view and writes turn.end.
func (s *Session) stayWith(t *turnCtx, lines ...string) (*Outcome, error) {
	for _, line := range lines {
		if line == "" {
			continue
		}
		t.says = append(t.says, line)
		if err := s.emit(t, trace.MachineSay{Text: line}); err != nil {
			return nil, err
		}
	}
	view, err := s.View()
	if err != nil {
		return s.abort(t, fault("view of state %q: %w", s.state, err))
	}
	payload := trace.TurnEnd{Outcome: OutcomeTransitioned, To: s.state}
	if view != "" {
		payload.View = stripANSI(view)
	}
	if err := s.emit(t, payload); err != nil {
		return nil, err
	}
	done, exit := s.Done()
	out := &Outcome{Outcome: OutcomeTransitioned, From: s.state, State: s.state, View: view, Says: t.says, Done: done, Exit: exit}
	return out, s.sink.EndTurn()
}

// converse makes one host.agent.converse call outside any effect chain,
// traced like an invoke's (harness.called, .dispatched, .returned). It
// returns the answer's text, the call's own failure, and a trace error.
func (s *Session) converse(ctx context.Context, t *turnCtx, inv *story.Invoke, args map[string]any) (string, error, error) {
	name := inv.Name
	if err := s.emit(t, trace.HarnessCalled{Namespace: name, Args: args}); err != nil {
		return "", nil, err
	}
	if err := s.emit(t, trace.HarnessDispatched{Namespace: name, Args: args}); err != nil {
		return "", nil, err
	}
	world := s.lendWorld()
	res, derr := s.host.Dispatch(ctx, &host.Call{Namespace: name, Args: args, Invoke: inv,
		SessionID: s.id, Turn: t.n, State: s.state, TurnState: t.start, World: world,
		Run: host.RunEnv{Live: s.liveFor(world), TitleOwned: s.TitleOwned()}})
	if derr != nil && isTraceErr(derr) {
		return "", nil, derr
	}
	var data map[string]any
	callErr := derr
	if derr == nil && res != nil {
		data, callErr = res.Data, res.Err
	}
	returned := trace.HarnessReturned{Namespace: name, Data: data}
	if callErr != nil {
		returned.Error = callErr.Error()
	}
	if err := s.emit(t, returned); err != nil {
		return "", nil, err
	}
	if callErr != nil {
		return "", callErr, nil
	}
	return answerText(data), nil, nil
}

// answerText is the text of a converse result: the submission when it is
// text, else its answer/text/message field, else stdout, else the
// submission as JSON.
func answerText(data map[string]any) string {
	sub := data["submitted"]
	switch v := sub.(type) {
	case string:
		return v
	case map[string]any:
		for _, k := range []string{"answer", "text", "message", "reply"} {
			if str, ok := v[k].(string); ok {
				return str
			}
		}
	}
	if out, ok := data["stdout"].(string); ok && out != "" {
		return out
	}
	if sub == nil {
		return ""
	}
	b, err := json.Marshal(sub)
	if err != nil {
		return fmt.Sprint(sub)
	}
	return string(b)
}
