package toolserver

import (
	"fmt"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Tool is one tool a group contributes: its MCP definition and handler.
// Version distinguishes two definitions of the same name (a plugin tool
// whose schema changed); built-in tools leave it empty. A session whose
// assembled names and versions are unchanged does not replace its set.
type Tool struct {
	Def     mcp.Tool
	Handler server.ToolHandlerFunc
	Version string
}

// ToolSource supplies tools from outside the registry, filtered for one
// surface: the seam through which plugin-contributed tools (issue 6) reach
// a session. It is called at every assembly, so a catalog change followed
// by Session.Refresh is picked up.
type ToolSource func(surface Surface) []Tool

// Group is a named set of tools with one registration function and one
// enablement rule. Register builds the group's tools for one session and
// the profile being assembled; it is called once per session, or at every
// assembly for a Dynamic group (whose tools come from a ToolSource).
type Group struct {
	Name     string
	Enabled  func(Profile) bool
	Register func(s *Session, p Profile) []Tool
	Dynamic  bool
}

// ProviderPrefix prefixes the name of a tool provider's group.
const ProviderPrefix = "provider:"

// ProviderGroup builds the group of tool provider name: enabled when the
// profile attaches that provider.
func ProviderGroup(name string, register func(*Session, Profile) []Tool) Group {
	return Group{
		Name:     ProviderPrefix + name,
		Enabled:  func(p Profile) bool { return p.HasProvider(name) },
		Register: register,
	}
}

// Registry is the declarative list of tool groups. Profile assembly walks
// it in order; adding a tool is adding a group (or a tool to one) and its
// rule. A Registry is immutable once built.
type Registry struct {
	groups []Group
	index  map[string]int
}

// NewRegistry returns a registry of groups, which must have distinct,
// non-empty names and both functions.
func NewRegistry(groups ...Group) (*Registry, error) {
	r := &Registry{index: map[string]int{}}
	for _, g := range groups {
		switch {
		case g.Name == "":
			return nil, fmt.Errorf("mcp registry: a group has no name")
		case g.Enabled == nil || g.Register == nil:
			return nil, fmt.Errorf("mcp registry: group %q needs both an enablement rule and a registration function", g.Name)
		}
		if _, dup := r.index[g.Name]; dup {
			return nil, fmt.Errorf("mcp registry: group %q is declared twice", g.Name)
		}
		r.index[g.Name] = len(r.groups)
		r.groups = append(r.groups, g)
	}
	return r, nil
}

// Groups returns the registry's groups in order.
func (r *Registry) Groups() []Group { return append([]Group(nil), r.groups...) }

// Enabled lists the names of the groups profile p enables, in registry
// order.
func (r *Registry) Enabled(p Profile) []string {
	var out []string
	for _, g := range r.groups {
		if g.Enabled(p) {
			out = append(out, g.Name)
		}
	}
	return out
}

// Check reports a profile naming a tool provider the registry lacks.
func (r *Registry) Check(p Profile) error {
	for _, name := range p.Providers {
		if _, ok := r.index[ProviderPrefix+name]; !ok {
			return fmt.Errorf("unknown tool provider %q (known: %s)", name, strings.Join(r.providers(), ", "))
		}
	}
	return nil
}

func (r *Registry) providers() []string {
	var out []string
	for _, g := range r.groups {
		if name, ok := strings.CutPrefix(g.Name, ProviderPrefix); ok {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// The built-in groups, in the order they are assembled.
const (
	GroupSession        = "session"
	GroupKanban         = "kanban"
	GroupUserQuestion   = "user-question"
	GroupParentQuestion = "parent-question"
	GroupTaskTitle      = "task-title"
	GroupPluginTools    = "plugin-tools"
)

// StoryFilesProvider is kitsoki's own tool provider: read-only access to
// the files of the run's story directory.
const StoryFilesProvider = "story-files"

// DefaultRegistry returns the registry of kitsoki's built-in groups: the
// tools of the live surfaces, the story-files provider and the plugin
// tools. The configuration and external surfaces' tools are not here; they
// belong to the outside surface (internal/serve/mcpserve), which builds its own
// registry. It is built once.
var DefaultRegistry = sync.OnceValue(func() *Registry {
	r, err := NewRegistry(builtinGroups()...)
	if err != nil {
		panic(err) // the built-in table is static; a clash is a programming error caught by tests
	}
	return r
})

func builtinGroups() []Group {
	live := func(p Profile) bool { return p.Surface.Live() }
	return []Group{
		{Name: GroupSession, Enabled: live, Register: sessionTools},
		{Name: GroupKanban, Enabled: func(p Profile) bool { return p.Surface == KanbanTask }, Register: kanbanTools},
		{Name: GroupUserQuestion, Enabled: func(p Profile) bool { return p.Has(UserQuestion) }, Register: userQuestionTools},
		{Name: GroupParentQuestion, Enabled: func(p Profile) bool { return p.Has(ParentQuestion) }, Register: parentQuestionTools},
		{Name: GroupTaskTitle, Enabled: func(p Profile) bool { return p.Has(TaskTitle) }, Register: taskTitleTools},
		ProviderGroup(StoryFilesProvider, storyFilesTools),
		{Name: GroupPluginTools, Enabled: live, Register: pluginTools, Dynamic: true},
	}
}

// pluginTools is the catalog seam: the catalog snapshot the session
// applied (or, before any snapshot, its ToolSource), filtered for its
// surface. It runs during assembly, with amu held.
func pluginTools(s *Session, p Profile) []Tool {
	switch {
	case s.applied != nil:
		return s.applied.For(p.Surface)
	case s.cfg.PluginTools != nil:
		return s.cfg.PluginTools(p.Surface)
	}
	return nil
}
