package story

import (
	"regexp"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"go.yaml.in/yaml/v3"
)

var effectKeys = &keySpec{
	v1: []string{"when", "set", "increment", "say", "emit", "invoke", "with", "bind", "on_error", "once", "id",
		"agent", "selection", "emit_intent", "slots", "target", "external_side_effect", "background", "on_complete", "retry", "effects"},
}

// actionKeys are the effect actions in precedence order: when an item has
// several, only the first runs.
var actionKeys = []string{"set", "increment", "say", "invoke", "emit"}

// invokeOnlyKeys are meaningful only next to invoke:.
var invokeOnlyKeys = []string{"with", "bind", "on_error", "once", "id", "agent", "selection", "external_side_effect", "background", "on_complete", "retry"}

// effCtx says where an effect list sits.
type effCtx struct {
	state *State
	where string // "on_enter" or "on.<intent>"
	arm   *Arm   // nil for on_enter
	// onComplete is set inside a background invoke's on_complete: chain,
	// the one place an effect may carry target:.
	onComplete bool
}

// effectRef is an effect to check once every file is loaded.
type effectRef struct {
	f    *file
	e    *Effect
	path string
	ctx  effCtx

	invokeNode       *yaml.Node
	withAgent        string // literal with.agent of a host.agent.* invoke
	withAgentNode    *yaml.Node
	withProvider     string // literal with.provider of a host.agent.* invoke
	withProviderNode *yaml.Node
	withSchema       string // literal with.schema of a host.agent.* invoke
	withSchemaNode   *yaml.Node
	agentNode        *yaml.Node
	idNode           *yaml.Node
	emitName         string // literal emit_intent name
	emitNode         *yaml.Node
}

func (l *loader) loadEffects(f *file, n *yaml.Node, base string, ctx effCtx) []*Effect {
	items, ok := l.list(f, n, base)
	if !ok {
		return nil
	}
	out := make([]*Effect, 0, len(items))
	for i, it := range items {
		if e := l.loadEffect(f, it, indexPath(base, i), ctx); e != nil {
			out = append(out, e)
		}
	}
	return out
}

func (l *loader) loadEffect(f *file, n *yaml.Node, path string, ctx effCtx) *Effect {
	fs, unknown, ok := l.fieldsU(f, n, path, effectKeys)
	if !ok {
		return nil
	}
	e := &Effect{Pos: l.pos(f, deref(n))}
	ref := &effectRef{f: f, e: e, path: path, ctx: ctx}
	if w, ok := fs.get("when"); ok {
		e.WhenPos = l.pos(f, deref(w.val))
		l.compileGuard(f, w.val, joinPath(path, "when"), func(g *expr.Guard) { e.When = g })
	}
	actions := make([]string, 0, len(actionKeys))
	for _, k := range actionKeys {
		if _, ok := fs.get(k); ok {
			actions = append(actions, k)
		}
	}
	if s, ok := fs.get("set"); ok {
		e.Set = l.loadSet(f, s.val, joinPath(path, "set"))
	}
	if s, ok := fs.get("increment"); ok {
		e.Increment = l.loadIncrement(f, s.val, joinPath(path, "increment"))
	}
	if s, ok := fs.get("say"); ok {
		l.compileText(f, s.val, joinPath(path, "say"), func(t *expr.Text) { e.Say = t })
	}
	if s, ok := fs.get("emit"); ok {
		l.compileTree(f, s.val, joinPath(path, "emit"), func(t *expr.Tree) { e.Emit = t })
	}
	if s, ok := fs.get("invoke"); ok {
		e.Invoke = l.loadInvoke(f, s, fs, path, ref)
	} else {
		for _, k := range invokeOnlyKeys {
			if x, ok := fs.get(k); ok {
				l.errAt(f, x.key, joinPath(path, k), "%s: is only valid on an invoke effect (add invoke: <handler>)", k)
				unknown++ // already explains what is missing
			}
		}
	}
	ei, hasEmit := fs.get("emit_intent")
	if hasEmit {
		p := joinPath(path, "emit_intent")
		if name, ok := l.str(f, ei.val, p); ok {
			l.compileValue(f, ei.val, p, func(v *expr.Value) { e.EmitIntent = v })
			if !isTemplated(name) && name != "" {
				ref.emitName, ref.emitNode = name, deref(ei.val)
			}
		}
	}
	if sl, ok := fs.get("slots"); ok {
		if !hasEmit {
			l.errAt(f, sl.key, joinPath(path, "slots"), "slots: is only valid with emit_intent:")
		} else {
			e.EmitSlots = l.loadTreeMap(f, sl.val, joinPath(path, "slots"))
		}
	}
	_, hasTarget := fs.get("target")
	if hasTarget {
		l.loadEffectTarget(f, fs, path, ctx, e, hasEmit, actions)
	}
	sub, hasSub := fs.get("effects")
	if hasSub {
		e.Effects = l.loadSubEffects(f, sub.val, joinPath(path, "effects"), ctx)
	}
	switch {
	case hasTarget, hasSub:
		// a target: effect has no action; loadEffectTarget checked it
	case len(actions) == 0 && !hasEmit && unknown == 0:
		// (with unknown keys, the unknown-key error is the real problem)
		l.errAt(f, deref(n), path, "effect has no action: use one of set, increment, say, emit, invoke or emit_intent")
	case len(actions) > 1:
		l.warnAt(f, deref(n), path, "effect has several actions (%s): only %s runs; put each in its own item",
			strings.Join(actions, ", "), actions[0])
		// After the compiled results are assigned, so nothing re-fills
		// a dropped action.
		keep := actions[0]
		l.finalizers = append(l.finalizers, func() { keepOnly(e, keep) })
	}
	l.effects = append(l.effects, ref)
	return e
}

// keepOnly clears every action of e except the one named.
func keepOnly(e *Effect, action string) {
	if action != "set" {
		e.Set = nil
	}
	if action != "increment" {
		e.Increment = nil
	}
	if action != "say" {
		e.Say = nil
	}
	if action != "invoke" {
		e.Invoke = nil
	}
	if action != "emit" {
		e.Emit = nil
	}
}

func isTemplated(s string) bool { return strings.Contains(s, "{{") }

func (l *loader) loadSet(f *file, n *yaml.Node, path string) []SetItem {
	es, _ := l.entries(f, n, path)
	sort.SliceStable(es, func(i, j int) bool { return es[i].name < es[j].name })
	out := make([]SetItem, len(es))
	for i, e := range es {
		out[i].Key = e.name
		item := &out[i]
		l.compileTree(f, e.val, joinPath(path, e.name), func(t *expr.Tree) { item.Value = t })
	}
	return out
}

func (l *loader) loadIncrement(f *file, n *yaml.Node, path string) []IncrementItem {
	es, _ := l.entries(f, n, path)
	out := make([]IncrementItem, 0, len(es))
	for _, e := range es {
		if by, ok := l.integer(f, e.val, joinPath(path, e.name)); ok {
			out = append(out, IncrementItem{Key: e.name, By: by})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// loadTreeMap compiles each value of a mapping as a value-template tree.
func (l *loader) loadTreeMap(f *file, n *yaml.Node, path string) map[string]*expr.Tree {
	es, ok := l.entries(f, n, path)
	if !ok {
		return nil
	}
	out := make(map[string]*expr.Tree, len(es))
	for _, e := range es {
		name := e.name
		l.compileTree(f, e.val, joinPath(path, name), func(t *expr.Tree) { out[name] = t })
	}
	return out
}

var bindPathRE = regexp.MustCompile(`^[^.\[\]\s{}]+(\[\d+\])*(\.[^.\[\]\s{}]+(\[\d+\])*)*$`)

// loadEffectTarget reads an effect's target: (valid only inside
// on_complete:, alone on its effect): the state the session moves to when
// the job's completion chain has run.
// loadSubEffects reads an effect's effects:: effects that run as part of
// it (after its own action; before the transition of an on_complete
// target:), checked like on_complete's: no background job, no
// on_complete of their own.
func (l *loader) loadSubEffects(f *file, n *yaml.Node, path string, ctx effCtx) []*Effect {
	sub := ctx
	sub.onComplete = false // a sub-effect makes no transition of its own
	out := l.loadEffects(f, n, path, sub)
	items, _ := l.list(f, n, path)
	for i, e := range out {
		if e.Invoke != nil && e.Invoke.Background && i < len(items) {
			l.errAt(f, items[i], indexPath(path, i), "an effect's effects: cannot start a background job (background: true)")
		}
		if e.Invoke != nil && len(e.Invoke.OnComplete) > 0 && i < len(items) {
			l.errAt(f, items[i], indexPath(path, i), "an effect's effects: cannot have an on_complete: of their own")
		}
	}
	return out
}

func (l *loader) loadEffectTarget(f *file, fs fieldSet, path string, ctx effCtx, e *Effect, hasEmit bool, actions []string) {
	t := fs.at("target")
	p := joinPath(path, "target")
	switch {
	case hasEmit:
		l.errAt(f, t.key, p, "emit_intent cannot be combined with target: on the same effect")
		return
	case !ctx.onComplete:
		l.errAt(f, t.key, p, "target: on an effect is only valid inside a background invoke's on_complete: (for a transition, write target: on the arm)")
		return
	case len(actions) > 0:
		l.errAt(f, t.key, p, "target: cannot share an effect with %s: put the %s in its own effect before the target: one", strings.Join(actions, ", "), actions[0])
		return
	}
	if _, ok := fs.get("bind"); ok {
		l.errAt(f, t.key, p, "target: cannot share an effect with bind:")
		return
	}
	raw, ok := l.str(f, t.val, p)
	if !ok {
		return
	}
	e.TargetPos = l.pos(f, deref(t.val))
	if isTemplated(raw) {
		// Rendered when the job completes (Kitsoki's on_complete
		// target may be a template), resolved then.
		l.compileValue(f, t.val, p, func(v *expr.Value) { e.TargetTemplate = v })
		return
	}
	l.targets = append(l.targets, &targetRef{
		f: f, n: deref(t.val), path: p, raw: raw, state: ctx.state,
		set: func(target string, stay bool) { e.Target, e.TargetStay = target, stay },
	})
}

func (l *loader) loadInvoke(f *file, inv entry, fs fieldSet, path string, ref *effectRef) *Invoke {
	in := &Invoke{Pos: l.pos(f, deref(inv.val))}
	p := joinPath(path, "invoke")
	name, ok := l.str(f, inv.val, p)
	if ok && strings.TrimSpace(name) == "" {
		l.errAt(f, deref(inv.val), p, "invoke: needs a handler name (e.g. host.agent.decide)")
	}
	in.Name = name
	ref.invokeNode = deref(inv.val)
	if ok && isTemplated(name) {
		l.compileValue(f, inv.val, p, func(v *expr.Value) { in.NameTemplate = v })
	}
	l.loadInvokeWith(f, inv, fs, path, in, ref)
	if b, ok := fs.get("bind"); ok {
		in.Bind = l.loadBind(f, b.val, joinPath(path, "bind"), in)
	}
	if oe, ok := fs.get("on_error"); ok {
		op := joinPath(path, "on_error")
		if raw, ok := l.str(f, oe.val, op); ok {
			st := ref.ctx.state
			l.targets = append(l.targets, &targetRef{
				f: f, n: deref(oe.val), path: op, raw: raw, state: st,
				set: func(target string, stay bool) { in.OnError = target },
				later: func(raw string, at Pos) {
					in.OnError, in.OnErrorDeferred, in.OnErrorPos = raw, true, at
				},
			})
		}
	}
	l.loadInvokeRunRules(f, fs, path, in, ref)
	strField(l, f, fs, path, "id", &in.ID)
	if id, ok := fs.get("id"); ok {
		ref.idNode = deref(id.val)
		if isTemplated(in.ID) {
			l.compileValue(f, id.val, joinPath(path, "id"), func(v *expr.Value) { in.IDTemplate = v })
		}
	}
	if a, ok := fs.get("agent"); ok {
		if s, ok := l.str(f, a.val, joinPath(path, "agent")); ok {
			in.Agent = s
			ref.agentNode = deref(a.val)
		}
	}
	if s, ok := fs.get("selection"); ok && !isNull(s.val) {
		sp := joinPath(path, "selection")
		if d := deref(s.val); d.Kind != yaml.MappingNode {
			l.errAt(f, d, sp, "expected a mapping, got %s", kindName(d))
		} else if v, ok := l.value(f, d, sp); ok {
			in.Selection, _ = v.(map[string]any)
		}
	}
	if in.Once && len(in.Bind) == 0 {
		l.errAt(f, fs.at("once").key, joinPath(path, "once"),
			"once: true needs bind: (once skips the call when every bind target is already set)")
	}
	return in
}

// loadInvokeWith reads an invoke's with: arguments, compiled as one tree.
// Built-in handlers get their arguments checked, agent verbs their agent
// arguments, and a Starlark invoke its script (which it cannot do without).
func (l *loader) loadInvokeWith(f *file, inv entry, fs fieldSet, path string, in *Invoke, ref *effectRef) {
	name, p := in.Name, joinPath(path, "invoke")
	if w, ok := fs.get("with"); ok && !isNull(w.val) {
		wp := joinPath(path, "with")
		if d := deref(w.val); d.Kind != yaml.MappingNode {
			l.errAt(f, d, wp, "expected a mapping of call arguments, got %s%s", kindName(d), shapeHint(wp, d))
		} else {
			l.builtinWith(f, d, wp, name)
			l.compileTree(f, d, wp, func(t *expr.Tree) { in.With = t })
			if strings.HasPrefix(name, "host.agent.") {
				l.agentWith(f, d, wp, ref)
			}
			if name == starlarkInvoke {
				l.starlarkWith(f, d, wp)
			}
		}
	} else if name == starlarkInvoke {
		l.errAt(f, deref(inv.val), p, "%s needs with.script: the path of a .star file (relative to the story)", starlarkInvoke)
	}
}

// loadInvokeRunRules reads how an invoke runs (background:, on_complete:,
// once:, external_side_effect:, retry:) and rejects the combinations that
// cannot work: on_complete without background, a background job started
// from an on_complete, once or retry on a background job.
func (l *loader) loadInvokeRunRules(f *file, fs fieldSet, path string, in *Invoke, ref *effectRef) {
	boolField(l, f, fs, path, "background", &in.Background)
	if oc, ok := fs.get("on_complete"); ok {
		ocp := joinPath(path, "on_complete")
		switch {
		case !in.Background:
			l.errAt(f, oc.key, ocp, "on_complete: needs background: true on the same invoke (it runs when the background job ends)")
		case ref.ctx.onComplete:
			// reported on background: below
		default:
			cctx := ref.ctx
			cctx.onComplete = true
			in.OnComplete = l.loadEffects(f, oc.val, ocp, cctx)
		}
	}
	if in.Background && ref.ctx.onComplete {
		l.errAt(f, fs.at("background").key, joinPath(path, "background"),
			"background: true is not allowed inside on_complete: (a job's completion cannot start another background job)")
	}
	boolField(l, f, fs, path, "once", &in.Once)
	if in.Background && in.Once {
		l.errAt(f, fs.at("once").key, joinPath(path, "once"), "once: cannot be combined with background: true (guard the invoke with when: instead)")
	}
	boolField(l, f, fs, path, "external_side_effect", &in.ExternalSideEffect)
	if r, ok := fs.get("retry"); ok && !isNull(r.val) {
		if in.Background {
			l.errAt(f, r.key, joinPath(path, "retry"), "retry: cannot be combined with background: true (a background job's call is made once; handle its failure in on_complete:)")
		} else {
			in.Retry = l.loadRetry(f, r.val, joinPath(path, "retry"))
		}
	}
}

func (l *loader) loadBind(f *file, n *yaml.Node, path string, in *Invoke) []Bind {
	es, _ := l.entries(f, n, path)
	sort.SliceStable(es, func(i, j int) bool { return es[i].name < es[j].name })
	out := make([]Bind, 0, len(es))
	var templates []entry // entries whose source is a template, in out order
	var at []int
	for _, e := range es {
		p := joinPath(path, e.name)
		src, ok := l.str(f, e.val, p)
		if !ok {
			continue
		}
		switch {
		case isTemplated(src) || src == "":
			// "" binds the empty string: the key is cleared on every call.
			templates, at = append(templates, e), append(at, len(out))
			out = append(out, Bind{Key: e.name})
		case bindPathRE.MatchString(src):
			out = append(out, Bind{Key: e.name, Path: src})
			l.binds = append(l.binds, bindRef{f: f, n: deref(e.val), path: p, in: in, source: src})
		default:
			l.errAt(f, deref(e.val), p, "invalid bind source %q: write a dotted path such as submitted.items[0], or a {{ }} template", src)
		}
	}
	// out is final now: pointers into it stay valid for the compile jobs.
	for i, e := range templates {
		b := &out[at[i]]
		p := joinPath(path, e.name)
		node := deref(e.val)
		l.compileValue(f, e.val, p, func(v *expr.Value) {
			b.Template = v
			l.binds = append(l.binds, bindRef{f: f, n: node, path: p, in: in, tmpl: v})
		})
	}
	return out
}
