package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// queued is an invoke waiting for dispatch.
type queued struct {
	inv  *story.Invoke
	name string         // the handler: inv.Name, rendered when templated
	args map[string]any // as rendered when queued
}

// enqueue queues an invoke (or records a once-skip). Its name (when
// templated) and with: render now against the world at the invoke's
// position.
func (s *Session) enqueue(t *turnCtx, inv *story.Invoke, where string, i int) error {
	if inv.Once && s.allBound(inv) {
		return s.emit(t, trace.WorldUpdate{Namespace: inv.Name, Skipped: "cached"})
	}
	name, err := s.invokeName(t, inv)
	if err != nil {
		return fault("%s, effect %d: invoke %s: %w", where, i, inv.Name, err)
	}
	args, err := s.renderWith(t, inv, name)
	if err != nil {
		return fault("%s, effect %d: invoke %s: with: %w", where, i, name, err)
	}
	if inv.Background {
		return s.startJob(t, inv, name, args, fmt.Sprintf("%s, effect %d", where, i))
	}
	t.queue = append(t.queue, &queued{inv: inv, name: name, args: args})
	s.decideCall(t, inv, name)
	return s.emit(t, trace.HarnessCalled{Namespace: name, Args: args, Background: false})
}

// invokeName is the handler an invoke calls: its name, or what its
// templated name renders to now.
func (s *Session) invokeName(t *turnCtx, inv *story.Invoke) (string, error) {
	if inv.NameTemplate == nil {
		return inv.Name, nil
	}
	v, err := inv.NameTemplate.Eval(s.env(t))
	if err != nil {
		return "", fmt.Errorf("rendering the name: %w", err)
	}
	name, _ := v.(string)
	if v != nil && name == "" {
		name = fmt.Sprint(v)
	}
	return name, nil
}

// handlerNameRE is the shape of a handler name: dotted words.
var handlerNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$`)

// checkRendered refuses a templated name that did not render to a handler
// name; the host then says whether one answers it.
func checkRendered(inv *story.Invoke, name string) error {
	if inv.NameTemplate != nil && !handlerNameRE.MatchString(name) {
		return fmt.Errorf("invoke %q rendered %q, which is not a handler name (dotted words, e.g. host.run)", inv.Name, name)
	}
	return nil
}

// renderWith renders an invoke's with: map and adds the reserved call key.
// Values spliced into a shell command line (host.run's cmd without args)
// are shell-quoted (shellCommand).
func (s *Session) renderWith(t *turnCtx, inv *story.Invoke, name string) (map[string]any, error) {
	var args map[string]any
	if inv.With == nil {
		args = map[string]any{}
	} else {
		env := s.env(t)
		v, err := inv.With.Eval(env)
		if err != nil {
			return nil, err
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("rendered to %T, want a map", v)
		}
		args = m
		if err := s.quoteShell(inv, name, args, env); err != nil {
			return nil, err
		}
	}
	switch {
	case inv.IDTemplate != nil:
		v, err := inv.IDTemplate.Eval(s.env(t))
		if err != nil {
			return nil, fmt.Errorf("id %q: %w", inv.ID, err)
		}
		args["call"] = fmt.Sprint(v)
	case inv.ID != "":
		args["call"] = inv.ID
	}
	return args, nil
}

// allBound reports whether every bind target holds a value (not nil, "",
// {} or []; 0 and false count as set).
func (s *Session) allBound(inv *story.Invoke) bool {
	for _, b := range inv.Bind {
		switch v := s.world[b.Key].(type) {
		case nil:
			return false
		case string:
			if v == "" {
				return false
			}
		case map[string]any:
			if len(v) == 0 {
				return false
			}
		case []any:
			if len(v) == 0 {
				return false
			}
		}
	}
	return true
}

// dispatchAll dispatches the queued calls, then runs post-bind passes until
// nothing new fires (step 7–8 of a turn).
func (s *Session) dispatchAll(ctx context.Context, t *turnCtx) error {
	for pass := 0; ; pass++ {
		n, err := s.dispatchQueue(ctx, t)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if err := s.foldCost(t); err != nil {
			return err
		}
		if pass >= MaxPostBindPass {
			return s.emit(t, trace.HarnessError{
				Phase: "post_bind_emit", Depth: pass, MaxDepth: MaxPostBindPass,
				Error: fmt.Sprintf("post-bind emit_intent passes exceeded %d; stopping in state %q", MaxPostBindPass, s.state)})
		}
		if t.noSettle {
			return nil
		}
		if err := s.postBind(t); err != nil {
			return err
		}
		if len(t.queue) == 0 {
			return nil
		}
	}
}

// dispatchQueue dispatches every queued call in order, binding results and
// following on_error redirects. It returns how many calls it dispatched.
func (s *Session) dispatchQueue(ctx context.Context, t *turnCtx) (int, error) {
	n, depth := 0, 0
	for len(t.queue) > 0 {
		q := t.queue[0]
		t.queue = t.queue[1:]
		failed, err := s.dispatchOne(ctx, t, q)
		if err != nil {
			return n, err
		}
		n++
		if !failed || q.inv.OnError == "" {
			continue
		}
		t.queue = nil // the rest of the batch is dropped
		target, err := s.onErrorTarget(q.inv)
		if err != nil {
			return n, err
		}
		h := &t.handled[len(t.handled)-1]
		if target == s.state {
			h.Redirect = RedirectIgnored
			continue // a self-redirect is ignored
		}
		depth++
		if depth > MaxOnErrorDepth {
			h.Redirect = RedirectCapped
			return n, s.emit(t, trace.HarnessError{
				Reason: "on_error.depth_cap_exceeded", Prior: s.state, Target: target, Depth: depth, Cap: MaxOnErrorDepth,
				Message: fmt.Sprintf("on_error redirects chained more than %d times; staying in %q", MaxOnErrorDepth, s.state)})
		}
		h.Redirect = RedirectEntered
		if err := s.transition(t, target); err != nil {
			return n, err
		}
		if err := s.fireEmits(t, 0); err != nil {
			return n, err
		}
	}
	return n, nil
}

// onErrorTarget is the state an invoke's on_error redirects to. A target
// the loader deferred (a name no state of the story had where it was
// written) is resolved now from the current state; one that still names no
// state is a fault naming the invoke, the state and where on_error is.
func (s *Session) onErrorTarget(inv *story.Invoke) (string, error) {
	if !inv.OnErrorDeferred {
		return inv.OnError, nil
	}
	to, stay, err := s.story.ResolveTarget(s.state, inv.OnError)
	if err != nil {
		return "", fault("%s: state %q: invoke %s failed and its on_error %q names no state here, %w (declare the state, or point on_error at one that exists)", inv.OnErrorPos, s.state, inv.Name, inv.OnError, err)
	}
	if stay {
		return s.state, nil
	}
	return to, nil
}

// dispatchOne re-renders, dispatches and binds one call. failed reports a
// host error (domain or infrastructure).
func (s *Session) dispatchOne(ctx context.Context, t *turnCtx, q *queued) (failed bool, err error) {
	args, rerr := s.renderWith(t, q.inv, q.name)
	fellBack := rerr != nil
	if fellBack {
		args = q.args
	} else if call, ok := q.args["call"]; ok {
		// The call-site address is fixed when the invoke is queued: a
		// templated id: names the call the story meant at that point
		// (stubs and cassettes key on it), not what later effects of the
		// same block set.
		args["call"] = call
	}
	name := q.name
	if err := s.emit(t, trace.HarnessDispatched{
		Namespace: name, Args: args, RerenderFellBack: fellBack, Background: false}); err != nil {
		return false, err
	}
	wasLent := s.worldLent
	world := s.lendWorld()
	var res *host.Result
	derr := checkRendered(q.inv, name)
	if derr == nil {
		res, derr = s.dispatchRetrying(ctx, t, q.inv, &host.Call{Namespace: name, Args: args, Invoke: q.inv,
			SessionID: s.id, Turn: t.n, State: s.state, TurnState: t.start, World: world,
			Run: host.RunEnv{Live: s.liveFor(world), TitleOwned: s.TitleOwned()}})
		if derr != nil && q.inv.NameTemplate != nil && !isTraceErr(derr) {
			derr = fmt.Errorf("invoke %q rendered %q: %w", q.inv.Name, name, derr)
		}
	}
	if !wasLent && res != nil && res.KeptNoWorld {
		// Lent to this call alone, and not kept: the next write need not
		// copy it.
		s.worldLent = false
	}
	var data map[string]any
	var callErr error
	var callID string
	switch {
	case derr != nil:
		if isTraceErr(derr) {
			return false, derr
		}
		callErr = derr
	case res != nil:
		data, callErr, callID = res.Data, res.Err, res.CallID
	}
	if data != nil {
		t.batchCost += agentCost(name, data)
	}
	if data != nil && callErr == nil { // a failed call binds nothing: on_error and the trace see its own error
		if err := s.bind(t, q.inv, data); err != nil {
			return false, err
		}
	}
	returned := trace.HarnessReturned{Namespace: name, Data: data}
	if callErr != nil {
		if q.inv.OnError == "" {
			t.errs = append(t.errs, fmt.Errorf("%s: %w", name, callErr))
		} else {
			t.handled = append(t.handled, HandledError{Namespace: name, Call: callOf(args), CallID: callID, Err: callErr, OnError: q.inv.OnError})
		}
		he := map[string]any{"namespace": name, "message": callErr.Error()}
		if data != nil {
			he["data"] = data
		}
		s.setWorld("last_error", callErr.Error())
		s.setWorld("host_error", he)
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{"last_error": callErr.Error()}}); err != nil {
			return true, err
		}
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{"host_error": he}}); err != nil {
			return true, err
		}
		returned.Error = callErr.Error()
	}
	if err := s.emit(t, returned); err != nil {
		return callErr != nil, err
	}
	return callErr != nil, s.takePending(t)
}

// isTraceErr reports whether err stops the run: a trace that cannot be
// written (host.TraceError), or an error that says it stops the run (a
// spending cap reached, agent.CostCapError). The turn stops instead of
// running the invoke's on_error.
func isTraceErr(err error) bool {
	var te *host.TraceError
	if errors.As(err, &te) {
		return true
	}
	var stop interface{ StopsRun() bool }
	return errors.As(err, &stop) && stop.StopsRun()
}

// bind writes the result into the world, keys in sorted order. A path that
// is missing writes nothing.
func (s *Session) bind(t *turnCtx, inv *story.Invoke, data map[string]any) error {
	for _, b := range inv.Bind {
		var v any
		if b.Template != nil {
			env := s.env(t)
			env["result"] = data
			out, err := b.Template.Eval(env)
			if err != nil {
				return fault("invoke %s: bind %s: %w", inv.Name, b.Key, err)
			}
			v = out
		} else {
			out, ok := LookupPath(data, b.Path)
			if !ok {
				continue
			}
			v = out
		}
		s.setWorld(b.Key, v)
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{b.Key: v}}); err != nil {
			return err
		}
	}
	return nil
}

// postBind re-checks every emit_intent of the settled state's on_enter
// against the world the binds produced and fires the non-empty ones.
func (s *Session) postBind(t *turnCtx) error {
	st := s.focus()
	if st == nil {
		return nil
	}
	for i, e := range st.OnEnter {
		if e.EmitIntent == nil {
			continue
		}
		if e.When != nil {
			ok, err := e.When.Eval(s.env(t))
			if err != nil {
				if werr := s.emit(t, trace.HarnessError{Phase: "post_bind_emit",
					Error: fmt.Sprintf("guard error in on_enter of %s, effect %d (%s): when %q: %v", s.state, i, e.WhenPos, e.When.Source(), err)}); werr != nil {
					return werr
				}
				continue
			}
			if !ok {
				continue
			}
		}
		if err := s.capture(t, e, "post-bind on_enter of "+s.state, i); err != nil {
			return err
		}
	}
	return s.fireEmits(t, 0)
}

// LookupPath reads a dotted path with [N] indexes ("submitted.items[0].id")
// from a result's data.
func LookupPath(data map[string]any, path string) (any, bool) {
	var cur any = data
	for rest, more := path, true; more; {
		var part string
		part, rest, more = strings.Cut(rest, ".")
		name, idx := part, ""
		if i := strings.IndexByte(part, '['); i >= 0 {
			name, idx = part[:i], part[i:]
		}
		if name != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[name]; !ok {
				return nil, false
			}
		}
		for idx != "" {
			end := strings.IndexByte(idx, ']')
			if idx[0] != '[' || end < 0 {
				return nil, false
			}
			n, err := strconv.Atoi(idx[1:end])
			l, ok := cur.([]any)
			if err != nil || !ok || n < 0 || n >= len(l) {
				return nil, false
			}
			cur, idx = l[n], idx[end+1:]
		}
	}
	return cur, true
}

// callOf is the call id in an invoke's rendered args (its id:, a
// templated one as rendered), "" when it has none.
func callOf(args map[string]any) string {
	c, _ := args["call"].(string)
	return c
}

// quoteShell renders again, shell-quoted, the command line of a call
// whose handler runs one through bash (catalog.Spec.Shell: host.run's cmd
// when args is absent): each {{ }} spliced into it becomes one piece of
// data for the place it lands (expr.Value.EvalShell).
func (s *Session) quoteShell(inv *story.Invoke, name string, args map[string]any, env expr.Env) error {
	sh := s.shellOf(name)
	if sh == nil || args[sh.Argv] != nil {
		return nil
	}
	v := inv.With.Member(sh.Command)
	if v == nil {
		return nil
	}
	line, err := v.EvalShell(env)
	if err != nil {
		return fmt.Errorf("%s: %w", sh.Command, err)
	}
	args[sh.Command] = line
	return nil
}

// shellOf is the shell command line of the handler that answers name: a
// built-in one's, through a host interface's default: when name is an
// interface's.
func (s *Session) shellOf(name string) *catalog.Shell {
	if rest, ok := strings.CutPrefix(name, story.InterfaceNamespace); ok {
		iface, op, _ := strings.Cut(rest, ".")
		in, ok := s.story.Interfaces[iface]
		if !ok || in.Default == "" {
			return nil
		}
		if spec, ok := catalog.Lookup(in.Default + "." + op); ok && op != "" {
			return spec.Shell
		}
		name = in.Default
	}
	spec, ok := catalog.Lookup(name)
	if !ok {
		return nil
	}
	return spec.Shell
}
