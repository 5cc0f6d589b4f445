package story

import (
	"slices"
	"sort"
	"strings"
)

// decider: configures the engine's judge (Kitsoki's engine-driven
// decider): when a turn comes to rest at a decision gate that owes an
// autonomous decision (a room with decider: llm, or, in the one_shot
// execution mode, a room with no decider: pin), the session asks the judge
// agent which of the gate's intents to take (host.agent.decide, with the
// decision schema), takes a confident answer naming one of them, and
// otherwise leaves the gate to the operator.

var deciderKeys = &keySpec{v1: []string{"agent", "schema", "prompt", "threshold"}}

// DefaultDeciderThreshold is the confidence a judge's answer needs when
// decider.threshold is not set.
const DefaultDeciderThreshold = 0.8

// Decider is the decider: block.
type Decider struct {
	Agent     string  // the judge persona (agents:)
	Schema    string  // the decision schema: {intent, confidence, reason}
	Prompt    string  // a prompt file; "" for the engine's own prompt
	Threshold float64 // the confidence floor (DefaultDeciderThreshold when unset)
	Invoke    *Invoke // the host.agent.decide call the judge is asked with
	Pos       Pos
}

func (l *loader) loadDecider(f *file, e entry) {
	if !l.once(f, e) {
		return
	}
	fs, ok := l.fields(f, e.val, "decider", deciderKeys)
	if !ok {
		return
	}
	d := &Decider{Threshold: DefaultDeciderThreshold, Pos: l.pos(f, e.key)}
	d.Invoke = &Invoke{Name: "host.agent.decide", Pos: d.Pos}
	l.st.Decider = d
	strField(l, f, fs, "decider", "agent", &d.Agent)
	if a, ok := fs.get("agent"); !ok || d.Agent == "" {
		l.errAt(f, e.key, "decider.agent", "decider: needs agent: (the judge, a persona from agents:)")
	} else {
		l.deciderAgent = &nodeRef{f: f, n: a.val, path: "decider.agent", value: d.Agent}
	}
	strField(l, f, fs, "decider", "schema", &d.Schema)
	if sc, ok := fs.get("schema"); !ok || d.Schema == "" {
		l.errAt(f, e.key, "decider.schema", "decider: needs schema: (the decision schema the judge submits: intent, confidence, reason)")
	} else {
		l.loadSchema(f, deref(sc.val), "decider.schema")
	}
	if p, ok := fs.get("prompt"); ok {
		strField(l, f, fs, "decider", "prompt", &d.Prompt)
		if d.Prompt != "" {
			l.loadPrompt(f, deref(p.val), "decider.prompt", true)
		}
	}
	if t, ok := fs.get("threshold"); ok {
		v, ok := l.number(f, t.val, "decider.threshold")
		switch {
		case !ok:
		case v < 0 || v > 1:
			l.errAt(f, t.val, "decider.threshold", "threshold is a confidence between 0 and 1, got %v", v)
		case v > 0:
			d.Threshold = v
		}
	}
}

// checkDeciderAgent checks decider.agent against agents:.
func (l *loader) checkDeciderAgent() {
	r := l.deciderAgent
	if r == nil {
		return
	}
	if _, ok := l.st.Agents[r.value]; ok {
		return
	}
	names := make([]string, 0, len(l.st.Agents))
	for n := range l.st.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	l.errAt(r.f, r.n, r.path, "agent %q is not declared in agents:%s", r.value, didYouMean(r.value, names))
}

// DeciderCandidate is an intent a judge may choose at a gate.
type DeciderCandidate struct {
	Name, Title, Description string
}

// DeciderPrompt is the engine's own prompt to the judge at state st, when
// decider.prompt names none: the gate and its candidate intents.
func DeciderPrompt(st *State, cands []DeciderCandidate) string {
	var b strings.Builder
	b.WriteString("You decide for an automated workflow.\n\n")
	if st.Description != "" {
		b.WriteString("Current step: " + st.Name + " — " + st.Description + "\n\n")
	} else {
		b.WriteString("Current step: " + st.Name + "\n\n")
	}
	b.WriteString("Choose exactly one of the actions below: submit {intent, confidence (0 to 1), reason}, intent being one of the action names. When you cannot decide with confidence, submit intent \"uncertain\".\n\nActions:\n")
	for _, c := range slices.Clone(cands) {
		desc := c.Description
		if desc == "" {
			desc = c.Title
		}
		b.WriteString("  - " + c.Name)
		if desc != "" {
			b.WriteString(": " + desc)
		}
		b.WriteString("\n")
	}
	return b.String()
}
