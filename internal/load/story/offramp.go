package story

import (
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// OffRamp is a state's agent_off_ramp: free text that no tier routes (the
// router answers none, or below its bar) is answered by an agent converse
// call instead of being rejected; the state and the world stay as they
// are.
type OffRamp struct {
	Agent   string // an agents: persona for the converse call; "" = none
	Persona string // inline instruction put before the utterance; wins over Agent
	Banner  string // shown above the answer; "" = none
	Pos     Pos
	// Invoke is the host.agent.converse call the session makes.
	Invoke *Invoke
}

// OffRampHandler is the handler an off-ramp calls.
const OffRampHandler = "host.agent.converse"

var offRampKeys = &keySpec{v1: []string{"agent", "persona", "banner"}}

// loadOffRamp reads agent_off_ramp: true | false | {agent, persona, banner}.
func (l *loader) loadOffRamp(f *file, e entry, path string, s *State) {
	d := deref(e.val)
	r := &OffRamp{Pos: l.pos(f, d)}
	if d != nil && d.Kind == yaml.MappingNode {
		// off_path's own keys get their own message, not "unknown key".
		rest := *d
		rest.Content = nil
		for i := 0; i+1 < len(d.Content); i += 2 {
			if k := d.Content[i].Value; k == "trigger" || k == "return" {
				l.errAt(f, d.Content[i], joinPath(path, k), "%s: belongs to off_path:; agent_off_ramp takes agent, persona and banner", k)
				continue
			}
			rest.Content = append(rest.Content, d.Content[i], d.Content[i+1])
		}
		fs, ok := l.fields(f, &rest, path, offRampKeys)
		if !ok {
			return
		}
		strField(l, f, fs, path, "agent", &r.Agent)
		strField(l, f, fs, path, "persona", &r.Persona)
		strField(l, f, fs, path, "banner", &r.Banner)
		if a, ok := fs.get("agent"); ok && r.Agent != "" {
			l.offRamps = append(l.offRamps, &nodeRef{f: f, n: a.val, path: joinPath(path, "agent"), value: r.Agent, state: s})
		}
	} else {
		on, ok := l.boolean(f, d, path)
		if !ok {
			return
		}
		if !on {
			return
		}
	}
	r.Invoke = &Invoke{Name: OffRampHandler, Pos: r.Pos}
	s.OffRamp = r
	l.offRampStates = append(l.offRampStates, &nodeRef{f: f, n: e.key, path: path, state: s})
}

// checkOffRamps checks each agent_off_ramp: its agent is a declared
// persona, and the state is neither terminal (no menu to return to) nor a
// conversational room (whose free text already has a sink).
func (l *loader) checkOffRamps() {
	for _, r := range l.offRampStates {
		switch {
		case r.state.Terminal:
			l.errAt(r.f, r.n, r.path, "agent_off_ramp on a terminal state: there is no menu to stay on; put it on a room the story rests in")
		case r.state.Mode == ModeConversational:
			l.errAt(r.f, r.n, r.path, "agent_off_ramp on a mode: conversational room: its free text already goes to its default_intent; drop one of the two")
		}
	}
	for _, r := range l.offRamps {
		if _, ok := l.st.Agents[r.value]; ok {
			continue
		}
		names := make([]string, 0, len(l.st.Agents))
		for n := range l.st.Agents {
			names = append(names, n)
		}
		sort.Strings(names)
		msg := "agent_off_ramp.agent %q is not declared in agents:%s"
		if len(names) == 0 {
			l.errAt(r.f, r.n, r.path, msg+" (the story declares no agents)", r.value, "")
			continue
		}
		l.errAt(r.f, r.n, r.path, msg+" (declared: %s)", r.value, didYouMean(r.value, names), strings.Join(names, ", "))
	}
}
