// Package toolserver is kitsoki's MCP tool server: the machinery every
// kitsoki MCP session runs on (typed profiles, tool groups, sessions, the
// loopback Streamable HTTP endpoint, the plugin-tool catalog) and the tools
// of the live surfaces, which the claude CLI transport hands to each agent
// it launches (one session per agent call, bound to that call's run). It
// does not load stories: the outside surface (`kitsoki mcp serve`, the
// configuration and external tools) is internal/serve/mcpserve, built on this
// package. Here `mcp` is always mark3labs' mcp-go.
//
// The tools a session offers are decided by a typed Profile: a base Surface,
// additive capability groups and attached tool providers. kitsoki resolves
// the profile from what it knows about the call (ResolveProfile); the agent
// can never ask for tools. A Registry holds the tool groups, each with one
// registration function and one enablement rule, and a Session assembles the
// enabled groups and swaps its whole tool set at once, so every change sends
// exactly one notifications/tools/list_changed and an unchanged set sends
// none.
package toolserver

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/plugin"
)

// Surface is the base tool surface of a session.
type Surface string

// The base surfaces (mcp-surfaces.md).
const (
	// KanbanTask is an agent doing work inside a run (host.agent.task).
	KanbanTask Surface = "kanban-task"
	// OfficeTask is a bounded judgement inside a run (ask, decide,
	// extract, converse).
	OfficeTask Surface = "office-task"
	// Configuration inspects and validates stories, plugin declarations
	// and schemas; it has no live run.
	Configuration Surface = "configuration"
	// External is Configuration plus starting a run.
	External Surface = "external"
)

// Surfaces lists every surface in the order messages name them.
var Surfaces = []Surface{KanbanTask, OfficeTask, Configuration, External}

// Live reports whether the surface belongs to a live agent call, whose
// tools act on the call's own run.
func (s Surface) Live() bool { return s == KanbanTask || s == OfficeTask }

// Capability is an additive, named capability group.
type Capability string

// The capability groups kitsoki grants. Provider groups are named by the
// profile's Providers instead.
const (
	// UserQuestion lets the agent ask the operator.
	UserQuestion Capability = "user-question"
	// ParentQuestion sends the agent's question to the parent run.
	ParentQuestion Capability = "parent-question"
	// TaskTitle lets the agent set the run's title.
	TaskTitle Capability = "task-title"
)

// Capabilities lists every capability in the order messages name them.
var Capabilities = []Capability{UserQuestion, ParentQuestion, TaskTitle}

// Profile is a session's resolved tool context. Build it with NewProfile,
// ParseMode or ResolveProfile, which check and normalise it; the zero value
// is not a valid profile.
type Profile struct {
	Surface Surface
	// Capabilities is sorted and free of duplicates.
	Capabilities []Capability
	// Providers names the tool providers attached to the run, sorted and
	// free of duplicates.
	Providers []string
}

// NewProfile checks and normalises a profile. Capabilities and providers
// belong to live surfaces only, and the two question groups exclude each
// other. Whether each provider exists is checked by Registry.Check.
func NewProfile(surface Surface, caps []Capability, providers []string) (Profile, error) {
	if !slices.Contains(Surfaces, surface) {
		return Profile{}, fmt.Errorf("unknown MCP surface %q (known: %s)", surface, joinSurfaces())
	}
	p := Profile{Surface: surface}
	for _, c := range caps {
		if !slices.Contains(Capabilities, c) {
			return Profile{}, fmt.Errorf("unknown MCP capability %q (known: user-question, parent-question, task-title)", c)
		}
		if !slices.Contains(p.Capabilities, c) {
			p.Capabilities = append(p.Capabilities, c)
		}
	}
	for _, name := range providers {
		if name == "" {
			return Profile{}, fmt.Errorf("empty tool provider name")
		}
		if !slices.Contains(p.Providers, name) {
			p.Providers = append(p.Providers, name)
		}
	}
	slices.Sort(p.Capabilities)
	sort.Strings(p.Providers)
	if !surface.Live() && (len(p.Capabilities) > 0 || len(p.Providers) > 0) {
		return Profile{}, fmt.Errorf("MCP surface %s takes no capabilities or providers (they act on a live run)", surface)
	}
	if p.Has(UserQuestion) && p.Has(ParentQuestion) {
		return Profile{}, fmt.Errorf("MCP capabilities user-question and parent-question exclude each other")
	}
	return p, nil
}

// Has reports whether the profile grants capability c.
func (p Profile) Has(c Capability) bool { return slices.Contains(p.Capabilities, c) }

// HasProvider reports whether tool provider name is attached.
func (p Profile) HasProvider(name string) bool { return slices.Contains(p.Providers, name) }

// Equal reports whether two profiles are the same.
func (p Profile) Equal(q Profile) bool {
	return p.Surface == q.Surface && slices.Equal(p.Capabilities, q.Capabilities) && slices.Equal(p.Providers, q.Providers)
}

// String renders the profile as "surface+cap+provider:name", the form logs
// and errors use.
func (p Profile) String() string {
	var b strings.Builder
	b.WriteString(string(p.Surface))
	for _, c := range p.Capabilities {
		b.WriteString("+")
		b.WriteString(string(c))
	}
	for _, pr := range p.Providers {
		b.WriteString("+provider:")
		b.WriteString(pr)
	}
	return b.String()
}

// legacyModes maps the MCP mode names of the source design to profiles.
var legacyModes = map[string]struct {
	surface Surface
	caps    []Capability
}{
	"task":               {KanbanTask, nil},
	"task-title-pending": {KanbanTask, []Capability{TaskTitle}},
	"office":             {OfficeTask, nil},
	"config":             {Configuration, nil},
	"external":           {External, nil},
}

// ParseMode turns a surface name, or a legacy mode name (task,
// task-title-pending, office, config, external), into a profile with no
// other capabilities.
func ParseMode(name string) (Profile, error) {
	if m, ok := legacyModes[name]; ok {
		return NewProfile(m.surface, m.caps, nil)
	}
	s := Surface(name)
	if !slices.Contains(Surfaces, s) {
		return Profile{}, fmt.Errorf("unknown MCP surface %q (known: %s; legacy names: task, task-title-pending, office, config, external)", name, joinSurfaces())
	}
	return NewProfile(s, nil, nil)
}

// ResolveProfile derives a live call's profile from what kitsoki knows about
// it. The verb picks the surface (task → kanban-task, the judgement verbs →
// office-task). Question groups exclude each other: a normal call gets
// user-question, an autopilot child parent-question, an autopilot root
// neither. task-title is granted while the run's title is agent-owned, and
// the attached tool providers are copied. A nil cc is a call detached from
// any run (no operator, no parent, no title): it gets the bare surface.
func ResolveProfile(verb string, cc *CallContext) (Profile, error) {
	var surface Surface
	switch verb {
	case plugin.VerbTask:
		surface = KanbanTask
	case plugin.VerbAsk, plugin.VerbDecide, plugin.VerbExtract, plugin.VerbConverse:
		surface = OfficeTask
	default:
		return Profile{}, fmt.Errorf("unknown agent verb %q (known: ask, decide, extract, task, converse)", verb)
	}
	if cc == nil {
		return NewProfile(surface, nil, nil)
	}
	var caps []Capability
	switch {
	case !cc.Autopilot:
		caps = append(caps, UserQuestion)
	case cc.HasParent:
		caps = append(caps, ParentQuestion)
	}
	if cc.TitleOwned {
		caps = append(caps, TaskTitle)
	}
	return NewProfile(surface, caps, cc.ToolProviders)
}

func joinSurfaces() string {
	s := make([]string, len(Surfaces))
	for i, x := range Surfaces {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}
