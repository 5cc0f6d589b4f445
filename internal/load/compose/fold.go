package compose

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	// namespaced are the top-level sections whose names are renamed
	// under the alias; every other section is walked for the names it
	// holds (states, arms, effects).
	namespaced = []string{"world", "intents", "host_interfaces", "states"}

	// worldKeyed are the effect keys whose mapping keys (or list items)
	// are world keys.
	worldKeyed = []string{"set", "increment", "bind", "unset", "append"}

	// intentValued are the keys whose literal value names an intent.
	intentValued = []string{"emit_intent", "default_intent", "intent", "plan_accept_intent", "plan_refine_intent", "room_chat"}

	ifaceInvoke = regexp.MustCompile(`^iface\.([A-Za-z][A-Za-z0-9_]*)(\..*)?$`)
)

// Fold returns doc, a mapping of top-level sections of the imported story,
// with its names renamed under the import. doc is not changed: the result
// shares every node that keeps its names. A node reached through several
// YAML aliases is folded once.
func (im *Import) Fold(doc *yaml.Node) *yaml.Node {
	f := &folder{im: im, memo: map[*yaml.Node]*yaml.Node{}, reported: map[string]bool{}, arms: map[*yaml.Node]bool{}}
	return f.mapping(doc, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		return k, f.section(k.Value, v)
	})
}

type folder struct {
	im       *Import
	memo     map[*yaml.Node]*yaml.Node // alias targets folded so far
	reported map[string]bool           // unmapped exits reported
	arms     map[*yaml.Node]bool       // on: arms (the other mappings with target: are effect items)
}

// section folds one top-level section.
func (f *folder) section(name string, v *yaml.Node) *yaml.Node {
	im := f.im
	return f.shared(v, func(d *yaml.Node) *yaml.Node {
		switch {
		case name == "world" && d.Kind == yaml.MappingNode:
			return f.renameKeys(d, func(k string) string { to, _ := im.WorldKey(k); return to })
		case name == "host_interfaces" && d.Kind == yaml.MappingNode:
			return f.renameKeys(d, im.Key)
		case name == "intents" && d.Kind == yaml.MappingNode:
			// An intent the importer exports down is the importer's: the
			// imported story's declaration of it gives way.
			return f.intentKeyed(dropKeys(d, im.Bare))
		case name == "states" && d.Kind == yaml.MappingNode:
			return f.mapping(d, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
				return renamedScalar(k, im.Alias+"."+NormState(k.Value)), f.walk(v)
			})
		case slices.Contains(namespaced, name):
			return d // the wrong shape: the loader reports it
		}
		return f.walk(d)
	})
}

// shared folds the node v stands for (an alias's target once, however
// many aliases reach it) and returns what stands for the result.
func (f *folder) shared(v *yaml.Node, fold func(*yaml.Node) *yaml.Node) *yaml.Node {
	if v == nil {
		return nil
	}
	if v.Kind == yaml.DocumentNode && len(v.Content) == 1 {
		if c := f.shared(v.Content[0], fold); c != v.Content[0] {
			n := *v
			n.Content = []*yaml.Node{c}
			return &n
		}
		return v
	}
	if v.Kind != yaml.AliasNode {
		return fold(v)
	}
	t := v.Alias
	for t != nil && t.Kind == yaml.AliasNode {
		t = t.Alias
	}
	if t == nil {
		return v
	}
	out, ok := f.memo[t]
	if !ok {
		f.memo[t] = t // a cycle through aliases reaches it unfolded
		out = fold(t)
		f.memo[t] = out
	}
	if out == t {
		return v
	}
	n := *v
	n.Alias = out
	return &n
}

// walk folds a state, arm, effect or view node (or a list of them).
func (f *folder) walk(v *yaml.Node) *yaml.Node {
	return f.shared(v, func(n *yaml.Node) *yaml.Node {
		switch n.Kind {
		case yaml.SequenceNode:
			return f.items(n, f.walk)
		case yaml.MappingNode:
			return f.state(n)
		}
		return n
	})
}

// state folds the keys of one mapping by what they mean. An arm's target
// into an exit the importer maps with set: gets that set: appended.
func (f *folder) state(n *yaml.Node) *yaml.Node {
	var exitSet, exitAt *yaml.Node
	out := f.mapping(n, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		d := deref(v)
		if d == nil {
			return k, v
		}
		switch {
		case (k.Value == "target" || k.Value == "on_error") && d.Kind == yaml.ScalarNode:
			to, set := f.target(d, k.Value == "target")
			if set != nil {
				exitSet, exitAt = set, to
			}
			return k, to
		case (k.Value == "on" || k.Value == "intents") && d.Kind == yaml.MappingNode:
			return k, f.shared(v, f.intentKeyed)
		case k.Value == "pending_plan_path" && d.Kind == yaml.ScalarNode:
			// contextual_routing's world path: its first key is the
			// imported story's
			head, rest, _ := strings.Cut(strings.TrimPrefix(d.Value, "world."), ".")
			to, _ := f.im.WorldKey(head)
			if rest != "" {
				to += "." + rest
			}
			return k, renamedScalar(d, to)
		case slices.Contains(intentValued, k.Value) && d.Kind == yaml.ScalarNode:
			if templated(d.Value) {
				return k, v // a template: renamed where it is compiled
			}
			return k, renamedScalar(d, f.im.IntentName(d.Value))
		case k.Value == "relevant_world" && d.Kind == yaml.SequenceNode:
			return k, f.worldList(d)
		case k.Value == "invoke" && d.Kind == yaml.ScalarNode:
			if m := ifaceInvoke.FindStringSubmatch(d.Value); m != nil && f.im.Ifaces[m[1]] {
				return k, renamedScalar(d, InterfaceNamespace+f.im.Key(m[1])+m[2])
			}
			return k, v
		case k.Value == "with":
			// A handler's payload: its keys are the handler's and its
			// templates are renamed where they are compiled; only a
			// prompt file the importer swaps changes here.
			return k, f.shared(v, f.with)
		case k.Value == "slots":
			return k, v // slot values and declarations: templates only
		case slices.Contains(worldKeyed, k.Value):
			return k, f.shared(v, func(d *yaml.Node) *yaml.Node { return f.worldKeyed(k.Value, d) })
		}
		return k, f.walk(v)
	})
	if exitSet != nil {
		out = f.appendSet(out, n, exitSet, exitAt)
	}
	return out
}

// worldKeyed folds the value of set:, increment:, bind:, unset: or
// append:: the world keys it names. Values are templates, renamed where
// they are compiled.
func (f *folder) worldKeyed(key string, d *yaml.Node) *yaml.Node {
	switch d.Kind {
	case yaml.MappingNode:
		return f.renameKeys(d, func(k string) string { to, _ := f.im.WorldKey(k); return to })
	case yaml.SequenceNode:
		return f.worldList(d)
	case yaml.ScalarNode:
		if key == "unset" {
			to, _ := f.im.WorldKey(d.Value)
			return renamedScalar(d, to)
		}
	}
	return d
}

// worldList renames a list of world keys.
func (f *folder) worldList(d *yaml.Node) *yaml.Node {
	return f.items(d, func(it *yaml.Node) *yaml.Node {
		if x := deref(it); x != nil && x.Kind == yaml.ScalarNode {
			to, _ := f.im.WorldKey(x.Value)
			return renamedScalar(x, to)
		}
		return it
	})
}

// intentKeyed folds a mapping keyed by intent names (intents:, on:). A
// lifted intent (intents.import) keeps its renamed entry and gets the same
// value under its bare name, so both names reach the same arms.
func (f *folder) intentKeyed(m *yaml.Node) *yaml.Node {
	var extra []*yaml.Node
	out := f.mapping(m, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		// on: values are arms (a list, or the one-arm mapping)
		if d := deref(v); d != nil {
			switch d.Kind {
			case yaml.MappingNode:
				f.arms[d] = true
			case yaml.SequenceNode:
				for _, it := range d.Content {
					if it = deref(it); it != nil && it.Kind == yaml.MappingNode {
						f.arms[it] = true
					}
				}
			}
		}
		nv := f.walk(v)
		if f.im.Lifted[k.Value] && f.im.Intents[k.Value] {
			extra = append(extra, k, nv)
		}
		return renamedScalar(k, f.im.IntentName(k.Value)), nv
	})
	if len(extra) == 0 {
		return out
	}
	c := *out
	c.Content = append(slices.Clip(out.Content), extra...)
	return &c
}

// with folds an invoke's with: mapping: a prompt file the importer swaps
// (overrides.prompts) is replaced.
func (f *folder) with(d *yaml.Node) *yaml.Node {
	if d.Kind != yaml.MappingNode || len(f.im.Prompts) == 0 {
		return d
	}
	return f.mapping(d, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		x := deref(v)
		if x != nil && x.Kind == yaml.ScalarNode && (k.Value == "prompt" || k.Value == "prompt_path") {
			if to, ok := f.im.Prompts[x.Value]; ok {
				return k, renamedScalar(x, to)
			}
		}
		return k, v
	})
}

// target folds a target: or on_error: value; for an arm's target: into an
// exit the importer maps with set:, it also returns that set:.
func (f *folder) target(v *yaml.Node, isTarget bool) (*yaml.Node, *yaml.Node) {
	raw := strings.TrimSpace(v.Value)
	switch {
	case raw == "" || raw == "." || templated(raw):
		return v, nil // a template is the imported story's, resolved at run time
	case strings.HasPrefix(raw, "@exit:"):
		name := strings.TrimPrefix(raw, "@exit:")
		x, ok := f.im.ExitTo[name]
		if !ok {
			if !f.reported[name] && f.im.Report != nil {
				f.reported[name] = true
				if f.im.Exits[name] {
					f.im.Report(v, fmt.Sprintf("@exit:%s: imports.%s.exits does not map the imported story's exit %q (add imports.%s.exits.%s.to: <state of this story>)", name, f.im.Alias, name, f.im.Alias, name))
				} else {
					f.im.Report(v, fmt.Sprintf("@exit:%s referenced but not declared in exits:", name))
				}
			}
			return renamedScalar(v, "."), nil // reported: not reported again as a target
		}
		to := renamedScalar(v, x.To)
		if to == v { // keep the node identity for ExitTarget
			c := *v
			to = &c
		}
		if f.im.ExitTarget != nil {
			f.im.ExitTarget(to)
		}
		if isTarget {
			return to, x.Set
		}
		return to, nil
	}
	if to, ok := f.im.State(raw); ok {
		return renamedScalar(v, to), nil
	}
	return v, nil
}

// appendSet appends a copy of set to out, the folded orig: to an arm's
// effects: as one more {set: …} effect (the list made when missing), or to
// an effect item holding target: (an on_complete transition) as its own
// set: when it has none. The copy is placed at the target (at), in the
// imported story's file, where the loader reports what is wrong with it.
func (f *folder) appendSet(out, orig, set, at *yaml.Node) *yaml.Node {
	c := Copy(set)
	PlaceAt(c, at.Line, at.Column)
	if f.im.Appended != nil {
		f.im.Appended(c)
	}
	res := *out
	res.Content = slices.Clip(out.Content)
	if !f.arms[orig] {
		for i := 0; i+1 < len(res.Content); i += 2 {
			if res.Content[i].Value == "set" {
				return out
			}
		}
		res.Content = append(res.Content, Scalar("set"), c)
		return &res
	}
	eff := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: at.Line, Column: at.Column, Content: []*yaml.Node{Scalar("set"), c}}
	for i := 0; i+1 < len(res.Content); i += 2 {
		if res.Content[i].Value != "effects" {
			continue
		}
		l := deref(res.Content[i+1])
		switch {
		case l != nil && l.Kind == yaml.SequenceNode:
			nl := *l
			nl.Content = append(slices.Clip(l.Content), eff)
			res.Content[i+1] = &nl
		case isNull(l):
			res.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{eff}}
		default:
			return out // the wrong shape: the loader reports it
		}
		return &res
	}
	res.Content = append(res.Content, Scalar("effects"), &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{eff}})
	return &res
}

// mapping folds each pair of a mapping with fn, returning n itself when no
// pair changed.
func (f *folder) mapping(n *yaml.Node, fn func(k, v *yaml.Node) (*yaml.Node, *yaml.Node)) *yaml.Node {
	var out []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		nk, nv := fn(k, v)
		if out == nil && (nk != k || nv != v) {
			out = make([]*yaml.Node, len(n.Content))
			copy(out, n.Content[:i])
		}
		if out != nil {
			out[i], out[i+1] = nk, nv
		}
	}
	if out == nil {
		return n
	}
	if len(n.Content)%2 == 1 {
		out[len(out)-1] = n.Content[len(n.Content)-1]
	}
	c := *n
	c.Content = out
	return &c
}

// items folds each item of a list with fn, returning n itself when none
// changed.
func (f *folder) items(n *yaml.Node, fn func(*yaml.Node) *yaml.Node) *yaml.Node {
	var out []*yaml.Node
	for i, it := range n.Content {
		nit := fn(it)
		if out == nil && nit != it {
			out = make([]*yaml.Node, len(n.Content))
			copy(out, n.Content[:i])
		}
		if out != nil {
			out[i] = nit
		}
	}
	if out == nil {
		return n
	}
	c := *n
	c.Content = out
	return &c
}

// renameKeys renames the keys of a mapping, keeping its values.
func (f *folder) renameKeys(d *yaml.Node, rename func(string) string) *yaml.Node {
	return f.mapping(d, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		return renamedScalar(k, rename(k.Value)), v
	})
}

// renamedScalar is n with value v: n itself when v is its value.
func renamedScalar(n *yaml.Node, v string) *yaml.Node {
	if n.Value == v {
		return n
	}
	c := *n
	c.Value = v
	return &c
}

// dropKeys returns m without the pairs whose key is in names.
func dropKeys(m *yaml.Node, names map[string]bool) *yaml.Node {
	if len(names) == 0 {
		return m
	}
	out, dropped := make([]*yaml.Node, 0, len(m.Content)), false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if names[m.Content[i].Value] {
			dropped = true
			continue
		}
		out = append(out, m.Content[i], m.Content[i+1])
	}
	if !dropped {
		return m
	}
	c := *m
	c.Content = out
	return &c
}
