package story

import (
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Overlay is a side conversation a typed command opens over the story: the
// off_path: escape hatch or a meta_modes: entry. While it is open the
// machine is paused: free text goes to an agent (host.agent.converse) and
// typed intents are refused; the exit command closes it and play resumes
// where it was (or, for an off_path with a return state, there).
type Overlay struct {
	Name    string // "off_path", or the meta mode's name
	Meta    bool   // a meta_modes: entry
	Trigger string // the command that opens it, as typed ("/freeform", "/meta")
	Exit    string // the command that closes it ("/onpath")
	Return  string // off_path: the state to enter on exit, "" = where it was
	Banner  string // shown when it opens
	Label   string // meta: a display name
	Message string // meta: shown when it closes
	Agent   string // the persona its converse calls use; "" = none
	Persist bool   // meta: reopening resumes the conversation (default true)
	// Group (meta: group:) puts the mode in a namespace: it opens with
	// "/meta <group> <trigger>", and with "/meta <group>" when Default
	// (default: true) marks it the group's default verb.
	Group   string
	Default bool
	Pos     Pos
	Invoke  *Invoke // the host.agent.converse call
}

// OverlayHandler is the handler an overlay's turns call.
const OverlayHandler = "host.agent.converse"

// BuiltinStoryAuthor and BuiltinStoryExplainer are the personas a meta
// mode may name without declaring them in agents:.
const (
	BuiltinStoryAuthor    = "story-author"
	BuiltinStoryExplainer = "story-explainer"
)

const storyAuthorPrompt = `You help the author of the story they are playing improve it.
Each message starts with a [context] block: the state they are in, its view
and the world. Answer questions about the story, suggest changes, and when
they agree to one, edit the story files in the story directory.`

const storyExplainerPrompt = `You answer questions about the story the user is playing: how to use it,
what the current room does, what they can do next. Each message starts with
a [context] block: the state they are in, its view and the world. Read the
story files when you need to; change nothing.`

// builtinPersona is the built-in persona name (story-author or
// story-explainer).
func builtinPersona(name string) *Persona {
	if name == BuiltinStoryExplainer {
		return &Persona{Name: name, SystemPrompt: storyExplainerPrompt, Tools: []string{"Read", "Glob", "Grep"}, ToolsSet: true}
	}
	return &Persona{Name: name, SystemPrompt: storyAuthorPrompt}
}

var offPathKeys = &keySpec{v1: []string{"trigger", "banner", "return", "agent", "persona"}}

var metaModeKeys = &keySpec{v1: []string{"trigger", "group", "default", "label", "banner", "agent", "persist", "return", "cwd", "tools"}}

var metaReturnKeys = &keySpec{v1: []string{"intent", "message"}}

// command turns a trigger as written into the typed command: "meta" is
// "/meta", "/freeform" stays.
func command(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "/") {
		return s
	}
	return "/" + s
}

// loadOffPath reads off_path: {trigger, banner, return, agent}. return is
// the exit command when it starts with "/" (default "/back"), else the
// state to enter on exit.
func (l *loader) loadOffPath(f *file, e entry) {
	if !l.once(f, e) {
		return
	}
	fs, ok := l.fields(f, e.val, "off_path", offPathKeys)
	if !ok {
		return
	}
	o := &Overlay{Name: "off_path", Exit: "/back", Pos: l.pos(f, e.key)}
	var trigger, ret string
	strField(l, f, fs, "off_path", "trigger", &trigger)
	strField(l, f, fs, "off_path", "banner", &o.Banner)
	strField(l, f, fs, "off_path", "return", &ret)
	strField(l, f, fs, "off_path", "agent", &o.Agent)
	if strings.TrimSpace(trigger) == "" {
		l.errAt(f, e.key, "off_path", "off_path needs trigger: (the command that opens it, e.g. \"/freeform\")")
		return
	}
	o.Trigger = command(trigger)
	if r, ok := fs.get("return"); ok && ret != "" {
		if strings.HasPrefix(strings.TrimSpace(ret), "/") {
			o.Exit = strings.TrimSpace(ret)
		} else {
			l.targets = append(l.targets, &targetRef{f: f, n: deref(r.val), path: "off_path.return", raw: ret,
				set: func(target string, stay bool) {
					if !stay {
						o.Return = target
					}
				}})
		}
	}
	if a, ok := fs.get("agent"); ok && o.Agent != "" {
		l.overlayAgents = append(l.overlayAgents, &nodeRef{f: f, n: a.val, path: "off_path.agent", value: o.Agent})
	}
	if p, ok := fs.get("persona"); ok {
		var persona string
		strField(l, f, fs, "off_path", "persona", &persona)
		if strings.TrimSpace(persona) == "" {
			l.errAt(f, p.val, "off_path.persona", "persona: is empty; give the off-path voice's instructions or remove the key")
		} else {
			l.overlayPersonas = append(l.overlayPersonas, overlayPersona{o: o, persona: persona})
		}
	}
	o.Invoke = &Invoke{Name: OverlayHandler, Pos: o.Pos}
	l.st.OffPath = o
	l.overlayRefs = append(l.overlayRefs, &overlayRef{o: o, f: f, n: e.key, path: "off_path"})
}

// loadMetaModes reads meta_modes: name → {trigger, label, banner, agent,
// persist, return: {intent, message}, tools}.
func (l *loader) loadMetaModes(f *file, e entry) {
	es, _ := l.entries(f, e.val, "meta_modes")
	for _, me := range es {
		path := joinPath("meta_modes", me.name)
		if !l.dup(f, me, path, "meta mode", l.st.MetaModes[me.name] != nil) {
			continue
		}
		fs, ok := l.fields(f, me.val, path, metaModeKeys)
		if !ok {
			continue
		}
		o := &Overlay{Name: me.name, Meta: true, Exit: "/onpath", Persist: true, Pos: l.pos(f, me.key)}
		var trigger string
		strField(l, f, fs, path, "trigger", &trigger)
		strField(l, f, fs, path, "label", &o.Label)
		strField(l, f, fs, path, "banner", &o.Banner)
		strField(l, f, fs, path, "agent", &o.Agent)
		boolField(l, f, fs, path, "persist", &o.Persist)
		good := true
		if strings.TrimSpace(trigger) == "" {
			l.errAt(f, me.key, path, "a meta mode needs trigger: (the slash command that opens it; trigger: meta is /meta)")
			good = false
		}
		a, hasAgent := fs.get("agent")
		if !hasAgent || o.Agent == "" {
			l.errAt(f, me.key, path, "a meta mode needs agent: (a persona from agents:, or %s)", BuiltinStoryAuthor)
			good = false
		} else {
			l.overlayAgents = append(l.overlayAgents, &nodeRef{f: f, n: a.val, path: joinPath(path, "agent"), value: o.Agent})
		}
		strField(l, f, fs, path, "group", &o.Group)
		boolField(l, f, fs, path, "default", &o.Default)
		if g, ok := fs.get("group"); ok && o.Group != "" && strings.TrimSpace(trigger) != "" && me.name != o.Group+"."+strings.TrimPrefix(trigger, "/") {
			l.errAt(f, g.val, joinPath(path, "group"), "a grouped meta mode is keyed <group>.<trigger>: name it %q", o.Group+"."+strings.TrimPrefix(trigger, "/"))
		}
		if d, ok := fs.get("default"); ok && o.Default && o.Group == "" {
			l.errAt(f, d.key, joinPath(path, "default"), "default: true makes the mode its group's default verb, and the mode has no group:")
		}
		mt := metaTools{o: o}
		if c, ok := fs.get("cwd"); ok {
			mt.cwd, mt.hasCwd = l.metaCwd(f, c, joinPath(path, "cwd"))
		}
		if t, ok := fs.get("tools"); ok {
			strListField(l, f, fs, path, "tools", &mt.tools)
			mt.hasTools, mt.n = true, t.key
		}
		if mt.hasTools || mt.hasCwd {
			l.metaTools = append(l.metaTools, mt)
		}
		if r, ok := fs.get("return"); ok {
			rfs, ok := l.fields(f, r.val, joinPath(path, "return"), metaReturnKeys)
			if ok {
				var intent string
				strField(l, f, rfs, joinPath(path, "return"), "intent", &intent)
				strField(l, f, rfs, joinPath(path, "return"), "message", &o.Message)
				if strings.TrimSpace(intent) != "" {
					o.Exit = command(intent)
				}
			}
		}
		if !good {
			continue
		}
		o.Trigger = command(trigger)
		o.Invoke = &Invoke{Name: OverlayHandler, Pos: o.Pos}
		if l.st.MetaModes == nil {
			l.st.MetaModes = map[string]*Overlay{}
		}
		l.st.MetaModes[me.name] = o
		l.overlayRefs = append(l.overlayRefs, &overlayRef{o: o, f: f, n: me.key, path: path})
	}
}

// overlayRef is an overlay to check once every file is loaded.
type overlayRef struct {
	o    *Overlay
	f    *file
	n    *yaml.Node
	path string
}

// metaTools is a meta mode's tools: and cwd: overrides, applied to a
// persona of its own once the agents are known.
type metaTools struct {
	o        *Overlay
	tools    []string
	hasTools bool
	cwd      string
	hasCwd   bool
	n        *yaml.Node
}

// overlayPersona is off_path.persona: the voice's instructions, over its
// agent's system prompt.
type overlayPersona struct {
	o       *Overlay
	persona string
}

// metaCwd reads a meta mode's cwd: ${VAR} references expanded (an unset
// one is an error, never an empty path), relative to the story directory
// and inside the workspace; "" keeps the agent's own.
func (l *loader) metaCwd(f *file, c entry, path string) (string, bool) {
	raw, _ := l.str(f, c.val, path)
	if strings.TrimSpace(raw) == "" {
		return "", false
	}
	var missing string
	expanded := os.Expand(raw, func(k string) string {
		v, ok := l.opts.lookupEnv(k)
		if !ok && missing == "" {
			missing = k
		}
		return v
	})
	if missing != "" {
		l.errAt(f, c.val, path, "cwd %q names ${%s}, which is not set", raw, missing)
		return "", false
	}
	abs, err := l.ws.Resolve(l.dir, expanded)
	if err != nil {
		l.errAt(f, c.val, path, "%s", fileErr("directory", expanded, err))
		return "", false
	}
	if st, err := l.ws.Stat(abs); err != nil || !st.IsDir() {
		l.errAt(f, c.val, path, "cwd %q is not a directory", expanded)
		return "", false
	}
	return abs, true
}

// checkOverlays checks the overlays' agents, gives a meta mode with tools:
// a persona of its own, and refuses commands that collide with each other
// or with an intent's name.
func (l *loader) checkOverlays() {
	for _, r := range l.overlayAgents {
		if _, ok := l.st.Agents[r.value]; ok {
			continue
		}
		if (r.value == BuiltinStoryAuthor || r.value == BuiltinStoryExplainer) && strings.HasPrefix(r.path, "meta_modes.") {
			l.st.Agents[r.value] = builtinPersona(r.value)
			continue
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range l.st.Agents {
				if !yield(n) {
					return
				}
			}
		})
		l.errAt(r.f, r.n, r.path, "agent %q is not declared in agents:%s", r.value, didYouMean(r.value, names))
	}
	for _, mt := range l.metaTools {
		base := l.st.Agents[mt.o.Agent]
		if base == nil {
			continue
		}
		p := *base
		p.Name = "meta:" + mt.o.Name
		if mt.hasTools {
			p.Tools, p.ToolsSet = mt.tools, true
			if p.Tools == nil {
				p.Tools = []string{}
			}
		}
		if mt.hasCwd {
			p.Cwd = mt.cwd
		}
		l.st.Agents[p.Name] = &p
		mt.o.Agent = p.Name
	}
	for _, op := range l.overlayPersonas {
		// The persona wins over the agent's system prompt; the agent's
		// model, tools and the rest stay.
		p := Persona{}
		if base := l.st.Agents[op.o.Agent]; base != nil {
			p = *base
		}
		p.Name, p.SystemPrompt = op.o.Name+":persona", op.persona
		l.st.Agents[p.Name] = &p
		op.o.Agent = p.Name
	}
	seen := map[string]string{}
	defaults := map[string]string{}
	refs := slices.Clone(l.overlayRefs)
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].path < refs[j].path })
	for _, r := range refs {
		key := r.o.Trigger
		if r.o.Group != "" {
			// A grouped mode opens with /meta <group> <trigger>: its trigger
			// is unique in its group and collides with no intent.
			key = "/meta " + r.o.Group + " " + strings.TrimPrefix(r.o.Trigger, "/")
			if r.o.Default {
				if prev, ok := defaults[r.o.Group]; ok {
					l.errAt(r.f, r.n, r.path, "group %q already has a default verb: %s", r.o.Group, prev)
				}
				defaults[r.o.Group] = r.path
			}
		} else if name := strings.TrimPrefix(r.o.Trigger, "/"); l.st.Intents[name] != nil {
			l.errAt(r.f, r.n, r.path, "command %s is also the name of intent %q; pick another trigger", r.o.Trigger, name)
		}
		if prev, ok := seen[key]; ok {
			l.errAt(r.f, r.n, r.path, "trigger %s is already used by %s", key, prev)
			continue
		}
		seen[key] = r.path
	}
}
