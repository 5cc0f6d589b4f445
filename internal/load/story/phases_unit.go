package story

import (
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/load/compose"
)

// phaseKeys are the top-level sections of the phase machinery.
var phaseKeys = []string{"phase_templates", "phases", "checkpoint_intents"}

// phaseYAML collects what an imported file's phases stamp out, in the
// imported story's own names, for the file's document: the stamped rooms
// go under its states: before the import folds it, so the fold names them
// like every room of the imported story.
type phaseYAML struct {
	own     map[string]*yaml.Node // the file's own states: rooms, by name
	stamped *yaml.Node            // the stamped rooms, a mapping
	counter []string              // cycle counters to declare in world:
	cp      *yaml.Node            // checkpoint_intents:, a mapping (nil when none)
}

// expandUnitPhases expands the phase_templates:, phases: and
// checkpoint_intents: of an imported file's document in place: the
// stamped rooms are added to its states:, the cycle counters to its
// world:, and the three sections are taken out. The expansion is the one
// a root story gets (stampPhase), written into YAML instead of loaded.
// report is false when the document is the file parsed again for the
// fold: its problems were reported when it was first read.
func (l *loader) expandUnitPhases(f *file, doc *yaml.Node, report bool) {
	m := deref(doc)
	if m != nil && m.Kind == yaml.DocumentNode && len(m.Content) == 1 {
		m = deref(m.Content[0])
	}
	if m == nil || m.Kind != yaml.MappingNode || !slices.ContainsFunc(phaseKeys, func(k string) bool { return mapValue(m, k) != nil }) {
		return
	}
	nd, nw := len(l.diags), len(l.warns)
	sink := &phaseYAML{own: map[string]*yaml.Node{}, stamped: &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}}
	states := deref(mapValue(m, "states"))
	if states != nil && states.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(states.Content); i += 2 {
			sink.own[normStateName(states.Content[i].Value)] = states.Content[i+1]
		}
	}
	if cp := deref(mapValue(m, "checkpoint_intents")); cp != nil && cp.Kind == yaml.MappingNode {
		sink.cp = cp
	}
	savedPhases, savedSink, savedDecl := l.phases, l.phaseSink, l.declared["phases"]
	l.phases, l.phaseSink = nil, sink
	delete(l.declared, "phases")
	es, _ := l.entries(f, m, "")
	for _, e := range es {
		switch e.name {
		case "phase_templates":
			l.loadPhaseTemplates(f, e)
		case "phases":
			l.loadPhasesBlock(f, e)
		case "checkpoint_intents":
			l.loadCheckpointIntents(f, e)
		}
	}
	l.expandPhases()
	l.phases, l.phaseSink = savedPhases, savedSink
	if savedDecl {
		l.declared["phases"] = true
	} else {
		delete(l.declared, "phases")
	}
	if !report {
		l.diags, l.warns = l.diags[:nd], l.warns[:nw]
	}
	sink.writeInto(m)
}

// writeInto takes the phase sections out of the top-level mapping m and
// adds the stamped rooms and the cycle counters.
func (s *phaseYAML) writeInto(m *yaml.Node) {
	out := m.Content[:0:0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !slices.Contains(phaseKeys, m.Content[i].Value) {
			out = append(out, m.Content[i], m.Content[i+1])
		}
	}
	m.Content = out
	section := func(name string) *yaml.Node {
		if v := deref(mapValue(m, name)); v != nil && v.Kind == yaml.MappingNode {
			return v
		}
		v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setMapKey(m, name, v)
		return v
	}
	if len(s.stamped.Content) > 0 {
		st := section("states")
		st.Content = append(st.Content, s.stamped.Content...)
	}
	if len(s.counter) > 0 {
		w := section("world")
		for _, c := range s.counter {
			if mapValue(w, c) == nil {
				str := func(v, tag string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v} }
				w.Content = append(w.Content, str(c, "!!str"), &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map",
					Content: []*yaml.Node{str("type", "!!str"), str("int", "!!str"), str("default", "!!str"), str("0", "!!int")}})
			}
		}
	}
}

// stamp takes one phase's stamped rooms: checkpoint intents merged into
// its <phase>_awaiting_reply rooms (a room's own intent of the name wins),
// cycle budgets applied to the rooms the story wrote out itself, and the
// counters noted.
func (s *phaseYAML) stamp(l *loader, stamped *yaml.Node, awaiting, handWritten []string, inst *phaseInstance, counters bool) {
	for i := 0; i+1 < len(stamped.Content); i += 2 {
		if s.cp != nil && slices.Contains(awaiting, stamped.Content[i].Value) {
			s.mergeCheckpoints(stamped.Content[i+1])
		}
	}
	s.stamped.Content = append(s.stamped.Content, stamped.Content...)
	for _, name := range handWritten {
		l.addCycleArms(deref(s.own[name]), inst)
	}
	if counters {
		for _, c := range inst.cycles {
			if n := cycleCounter(inst.id, c.arc); !slices.Contains(s.counter, n) {
				s.counter = append(s.counter, n)
			}
		}
	}
}

func (s *phaseYAML) mergeCheckpoints(room *yaml.Node) {
	room = deref(room)
	if room == nil || room.Kind != yaml.MappingNode {
		return
	}
	in := deref(mapValue(room, "intents"))
	if in == nil || in.Kind != yaml.MappingNode {
		in = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setMapKey(room, "intents", in)
	}
	for i := 0; i+1 < len(s.cp.Content); i += 2 {
		if mapValue(in, s.cp.Content[i].Value) == nil {
			in.Content = append(in.Content, s.cp.Content[i], compose.Copy(s.cp.Content[i+1]))
		}
	}
}
