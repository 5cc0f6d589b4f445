package compose

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
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
	intentValued = []string{"emit_intent", "default_intent", "intent", "plan_accept_intent", "plan_refine_intent", "room_chat", "annotate_intent"}

	// intentListed are the keys whose value is an intent name or a list
	// of them (a room's menu:, an arm's or effect's emit:).
	intentListed = []string{"menu", "emit"}

	ifaceInvoke = regexp.MustCompile(`^iface\.([A-Za-z][A-Za-z0-9_]*)(\..*)?$`)
)

// Fold renames the names of doc, a mapping of top-level sections of the
// imported story, under the import, in place: the caller owns doc (the
// loader gives each import its own parse of a file imported twice), so
// nothing is copied. A node reached through several YAML aliases is folded
// once. It returns doc.
func (im *Import) Fold(doc *yaml.Node) *yaml.Node {
	f := &folder{im: im, memo: map[*yaml.Node]*yaml.Node{}, reported: map[string]bool{}, arms: map[*yaml.Node]bool{}}
	return f.mapping(doc, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		return k, f.section(k.Value, v)
	})
}

type folder struct {
	im       *Import
	memo     map[*yaml.Node]*yaml.Node // anchored nodes folded so far
	reported map[string]bool           // unmapped exits reported
	arms     map[*yaml.Node]bool       // on: arms (the other mappings with target: are effect items)
	renamed  map[*yaml.Node]bool       // anchored scalars renamed (an alias reaches them again)
	names    map[nameKey]string        // new names made so far, made once each
}

type nameKey struct {
	kind byte // 'w' world key, 'i' intent, 'k' interface, 's' state path
	name string
}

// name is the new name of name, made by mk the first time it is asked
// for: a name renamed in many places is one string.
func (f *folder) name(kind byte, name string, mk func(string) string) string {
	k := nameKey{kind, name}
	if to, ok := f.names[k]; ok {
		return to
	}
	if f.names == nil {
		f.names = map[nameKey]string{}
	}
	to := mk(name)
	f.names[k] = to
	return to
}

// world is the importer's name of a world key (the key itself when it is
// not the imported story's).
func (f *folder) world(k string) string {
	if !f.im.World[k] {
		return k
	}
	return f.name('w', k, f.im.Key)
}

// intent is the importer's name of an intent.
func (f *folder) intent(name string) string {
	if _, ok := f.im.Intent(name); !ok {
		return name
	}
	return f.name('i', name, f.im.Key)
}

// section folds one top-level section.
func (f *folder) section(name string, v *yaml.Node) *yaml.Node {
	im := f.im
	return f.shared(v, func(d *yaml.Node) *yaml.Node {
		switch {
		case name == "world" && d.Kind == yaml.MappingNode:
			return f.renameKeys(d, f.world)
		case name == "host_interfaces" && d.Kind == yaml.MappingNode:
			return f.renameKeys(d, func(k string) string { return f.name('k', k, im.Key) })
		case name == "intents" && d.Kind == yaml.MappingNode:
			// An intent the importer exports down is the importer's: the
			// imported story's declaration of it gives way.
			return f.intentKeyed(dropKeys(d, im.Bare))
		case name == "states" && d.Kind == yaml.MappingNode:
			return f.mapping(d, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
				return f.rename(k, f.name('s', NormState(k.Value), func(p string) string { return im.Alias + "." + p })), f.walk(v)
			})
		case slices.Contains(namespaced, name):
			return d // the wrong shape: the loader reports it
		}
		return f.walk(d)
	})
}

// shared folds the node v stands for (an anchored node once, however many
// aliases reach it) and returns what stands for the result.
func (f *folder) shared(v *yaml.Node, fold func(*yaml.Node) *yaml.Node) *yaml.Node {
	if v == nil {
		return nil
	}
	if v.Kind == yaml.DocumentNode && len(v.Content) == 1 {
		v.Content[0] = f.shared(v.Content[0], fold)
		return v
	}
	if v.Kind != yaml.AliasNode && v.Anchor == "" {
		return fold(v) // reached once: no alias names it
	}
	t := v
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
	if v == t || out == t {
		return v
	}
	v.Alias = out // a fold replaced the anchored node (not done today)
	return v
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
	var exitSet, exitAt, exitTo *yaml.Node
	var exit string
	out := f.mapping(n, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		d := deref(v)
		if d == nil {
			return k, v
		}
		switch {
		case (k.Value == "target" || k.Value == "on_error") && d.Kind == yaml.ScalarNode:
			to, set, name := f.targetKey(d, k.Value == "target")
			if set != nil {
				exitSet, exitAt = set, to
			}
			if name != "" {
				exit, exitTo = name, to
			}
			return k, to
		case (k.Value == "on" || k.Value == "intents") && d.Kind == yaml.MappingNode:
			return k, f.shared(v, f.intentKeyed)
		case k.Value == "pending_plan_path" && d.Kind == yaml.ScalarNode:
			// contextual_routing's world path: its first key is the
			// imported story's
			head, rest, _ := strings.Cut(strings.TrimPrefix(d.Value, "world."), ".")
			to := f.world(head)
			if rest != "" {
				to += "." + rest
			}
			return k, f.rename(d, to)
		case slices.Contains(intentValued, k.Value) && d.Kind == yaml.ScalarNode:
			if templated(d.Value) {
				return k, v // a template: renamed where it is compiled
			}
			return k, f.rename(d, f.intent(d.Value))
		case k.Value == "relevant_world" && d.Kind == yaml.SequenceNode:
			return k, f.worldList(d)
		case slices.Contains(intentListed, k.Value) && (d.Kind == yaml.SequenceNode || d.Kind == yaml.ScalarNode):
			return k, f.shared(v, f.intentList)
		case k.Value == "invoke" && d.Kind == yaml.ScalarNode:
			if m := ifaceInvoke.FindStringSubmatch(d.Value); m != nil && f.im.Ifaces[m[1]] {
				return k, f.rename(d, InterfaceNamespace+f.im.Key(m[1])+m[2])
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
	if exit != "" {
		f.checkRequires(out, exit, exitTo)
	}
	if exitSet != nil {
		f.appendSet(out, exitSet, exitAt)
	}
	return out
}

// targetKey folds a target: or on_error: value (target), and names the
// exit a target: into a mapped exit enters ("" otherwise), whose
// requires: the transition is checked against.
func (f *folder) targetKey(d *yaml.Node, isTarget bool) (*yaml.Node, *yaml.Node, string) {
	name, isExit := strings.CutPrefix(strings.TrimSpace(d.Value), "@exit:")
	to, set := f.target(d, isTarget)
	if !isExit || !isTarget || !hasExit(f.im.ExitTo, name) {
		name = ""
	}
	return to, set, name
}

// checkRequires reports the keys of exits.<exit>.requires that the
// transition n (an arm, or an on_complete item with target:) does not
// set in its effects, nor hold a non-zero default. It runs before the
// importer's exit set: is appended: that writes the importer's keys.
func (f *folder) checkRequires(n *yaml.Node, exit string, at *yaml.Node) {
	req := f.im.Requires[exit]
	if len(req) == 0 || f.im.Report == nil {
		return
	}
	set := map[string]bool{}
	writtenKeys(n, set)
	var missing []string
	for _, k := range req {
		if !set[f.world(k)] && !f.im.NonZero[k] {
			missing = append(missing, strconv.Quote(k))
		}
	}
	if len(missing) > 0 {
		f.im.Report(at, fmt.Sprintf("@exit:%s requires %s (exits.%s.requires), and this transition does not set it: set it in the transition's effects (set:, increment: or bind:), or give it a non-zero default in world:",
			exit, strings.Join(missing, ", "), exit))
	}
}

func hasExit(m map[string]Exit, name string) bool {
	_, ok := m[name]
	return ok
}

// writtenKeys adds the world keys an arm or effect mapping writes: the
// keys of its set:, increment: and bind:, and of its effects:, nested.
func writtenKeys(n *yaml.Node, into map[string]bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		v := deref(n.Content[i+1])
		if v == nil {
			continue
		}
		switch n.Content[i].Value {
		case "set", "increment", "bind":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					into[v.Content[j].Value] = true
				}
			}
		case "effects":
			if v.Kind == yaml.SequenceNode {
				for _, it := range v.Content {
					writtenKeys(it, into)
				}
			}
		}
	}
}

// worldKeyed folds the value of set:, increment:, bind:, unset: or
// append:: the world keys it names. Values are templates, renamed where
// they are compiled.
func (f *folder) worldKeyed(key string, d *yaml.Node) *yaml.Node {
	switch d.Kind {
	case yaml.MappingNode:
		return f.renameKeys(d, f.world)
	case yaml.SequenceNode:
		return f.worldList(d)
	case yaml.ScalarNode:
		if key == "unset" {
			return f.rename(d, f.world(d.Value))
		}
	}
	return d
}

// intentList renames an intent name, or a list of them, written
// literally; a template is renamed where it is compiled.
func (f *folder) intentList(d *yaml.Node) *yaml.Node {
	one := func(x *yaml.Node) *yaml.Node {
		if x.Kind != yaml.ScalarNode || templated(x.Value) {
			return x
		}
		return f.rename(x, f.intent(x.Value))
	}
	if d.Kind == yaml.ScalarNode {
		return one(d)
	}
	return f.items(d, func(it *yaml.Node) *yaml.Node {
		if x := deref(it); x != nil {
			return one(x)
		}
		return it
	})
}

// worldList renames a list of world keys.
func (f *folder) worldList(d *yaml.Node) *yaml.Node {
	return f.items(d, func(it *yaml.Node) *yaml.Node {
		if x := deref(it); x != nil && x.Kind == yaml.ScalarNode {
			return f.rename(x, f.world(x.Value))
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
			bare := *k // the same arms under the bare name
			extra = append(extra, &bare, nv)
		}
		return f.rename(k, f.intent(k.Value)), nv
	})
	out.Content = append(out.Content, extra...)
	return out
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
				return k, f.rename(x, to)
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
			return f.rename(v, "."), nil // reported: not reported again as a target
		}
		to := f.rename(v, x.To)
		if f.im.ExitTarget != nil {
			f.im.ExitTarget(to, name)
		}
		if isTarget {
			return to, x.Set
		}
		return to, nil
	}
	if norm := NormState(raw); f.im.States[FirstSeg(norm)] {
		return f.rename(v, f.name('s', norm, func(p string) string { return f.im.Alias + "." + p })), nil
	}
	return v, nil
}

// appendSet appends a copy of set to n (an arm or effect item): to an
// arm's effects: as one more {set: …} effect (the list made when missing),
// or to an effect item holding target: (an on_complete transition) as its
// own set: when it has none. The copy is placed at the target (at), in the
// imported story's file, where the loader reports what is wrong with it.
func (f *folder) appendSet(n, set, at *yaml.Node) {
	c := Copy(set)
	PlaceAt(c, at.Line, at.Column)
	if f.im.Appended != nil {
		f.im.Appended(c)
	}
	if !f.arms[n] {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "set" {
				return
			}
		}
		n.Content = append(n.Content, Scalar("set"), c)
		return
	}
	eff := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: at.Line, Column: at.Column, Content: []*yaml.Node{Scalar("set"), c}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "effects" {
			continue
		}
		switch l := deref(n.Content[i+1]); {
		case l != nil && l.Kind == yaml.SequenceNode:
			l.Content = append(l.Content, eff)
		case isNull(l):
			n.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{eff}}
		}
		return // another shape is the loader's to report
	}
	n.Content = append(n.Content, Scalar("effects"), &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{eff}})
}

// mapping folds each pair of a mapping with fn.
func (f *folder) mapping(n *yaml.Node, fn func(k, v *yaml.Node) (*yaml.Node, *yaml.Node)) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		n.Content[i], n.Content[i+1] = fn(n.Content[i], n.Content[i+1])
	}
	return n
}

// items folds each item of a list with fn.
func (f *folder) items(n *yaml.Node, fn func(*yaml.Node) *yaml.Node) *yaml.Node {
	for i, it := range n.Content {
		n.Content[i] = fn(it)
	}
	return n
}

// renameKeys renames the keys of a mapping, keeping its values.
func (f *folder) renameKeys(d *yaml.Node, rename func(string) string) *yaml.Node {
	return f.mapping(d, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		return f.rename(k, rename(k.Value)), v
	})
}

// rename sets scalar n's value to v, once for an anchored scalar (which
// aliases reach again, already renamed).
func (f *folder) rename(n *yaml.Node, v string) *yaml.Node {
	if n.Value == v {
		return n
	}
	if n.Anchor != "" {
		if f.renamed[n] {
			return n
		}
		if f.renamed == nil {
			f.renamed = map[*yaml.Node]bool{}
		}
		f.renamed[n] = true
	}
	n.Value = v
	return n
}

// dropKeys takes the pairs whose key is in names out of m.
func dropKeys(m *yaml.Node, names map[string]bool) *yaml.Node {
	if len(names) == 0 {
		return m
	}
	out := m.Content[:0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !names[m.Content[i].Value] {
			out = append(out, m.Content[i], m.Content[i+1])
		}
	}
	m.Content = out
	return m
}
