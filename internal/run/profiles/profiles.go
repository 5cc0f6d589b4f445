// Package profiles puts a run's agent profiles together: the profiles of
// .kitsoki.yaml (internal/load/project) as declarations its registry can
// build (profile.<name>), the choice the run starts on (--profile or
// --agent, story_profiles:, default_profile:), the profiles chosen per
// persona (agent_profiles:), and the live switches of a running session
// (:provider, :model, :effort), each recorded in the trace as
// kitsoki.agent.switched. The host applies the choice
// (internal/hosts/host.Selection); this package only decides it.
package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/project"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Request is what the command line asks of a run.
type Request struct {
	// Profile is --profile: a profile of .kitsoki.yaml.
	Profile string
	// Agent is --agent: an agent_plugins alias of the story (agent.x or
	// x), or a backend name (anthropic, openai, codex, copilot, claude)
	// run with its defaults.
	Agent string
	// LookupEnv resolves ${VAR} in profiles' env: (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// Plan is a run's profiles.
type Plan struct {
	// Decls are the declarations of the profiles' agents, by alias
	// (profile.<name>), for the story's registry.
	Decls map[string]agent.Declaration
	// Secrets are the values substituted from ${VAR} in their env:.
	Secrets []string
	// Selection is the run's choice of its default agent.
	Selection *host.Selection

	cfg      *project.Config
	resolved map[string]project.Resolved
	broken   map[string]error // profiles whose env: does not resolve
	start    string           // the profile the run started on
}

// New plans a run of st: every profile resolved (one whose variables are
// not set fails only when chosen), the starting choice and the persona
// choices. A choice that names nothing, or a profile that does not
// resolve, is an error that says where it was named.
func New(cfg *project.Config, st *story.Story, req Request) (*Plan, error) {
	if cfg == nil {
		cfg = &project.Config{}
	}
	lookup := req.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	p := &Plan{cfg: cfg, Decls: map[string]agent.Declaration{}, resolved: map[string]project.Resolved{}, broken: map[string]error{}}
	for name, pr := range cfg.Profiles {
		r, err := pr.Resolve(st.Dir, lookup)
		if err != nil {
			p.broken[name] = err
			continue
		}
		p.resolved[name] = r
		p.Decls[r.Decl.Alias] = r.Decl
		p.Secrets = append(p.Secrets, r.Secrets...)
	}
	start, explicit, err := p.starting(st, req)
	if err != nil {
		return nil, err
	}
	personas := map[string]host.Choice{}
	for _, persona := range sortedKeys(cfg.AgentProfiles) {
		c, err := p.Choice(cfg.AgentProfiles[persona])
		if err != nil {
			return nil, fmt.Errorf("agent_profiles.%s: %w", persona, err)
		}
		personas[persona] = c
	}
	p.Selection = host.NewSelection(start, explicit, personas)
	return p, nil
}

// starting is the choice the run starts on: --agent, --profile,
// story_profiles: (the story's app id, else its directory's name),
// default_profile:, else none.
func (p *Plan) starting(st *story.Story, req Request) (host.Choice, bool, error) {
	switch {
	case req.Profile != "" && req.Agent != "":
		return host.Choice{}, false, fmt.Errorf("--profile and --agent both choose the default agent: give one")
	case req.Agent != "":
		c, err := p.agentChoice(st, req.Agent)
		return c, true, err
	case req.Profile != "":
		c, err := p.Choice(req.Profile)
		if err != nil {
			err = fmt.Errorf("--profile %s: %w", req.Profile, err)
		}
		p.start = req.Profile
		return c, true, err
	}
	for _, key := range []string{st.App.ID, filepath.Base(st.Dir)} {
		if name, ok := p.cfg.StoryProfiles[key]; ok && key != "" {
			c, err := p.Choice(name)
			if err != nil {
				err = fmt.Errorf("story_profiles.%s: %w", key, err)
			}
			p.start = name
			return c, false, err
		}
	}
	if name := p.cfg.DefaultProfile; name != "" {
		c, err := p.Choice(name)
		if err != nil {
			err = fmt.Errorf("default_profile %s: %w", name, err)
		}
		p.start = name
		return c, false, err
	}
	return host.Choice{}, false, nil
}

// agentChoice is --agent's choice: the story's alias, else a backend run
// with its defaults (its declaration added as profile.<backend>).
func (p *Plan) agentChoice(st *story.Story, name string) (host.Choice, error) {
	for _, alias := range []string{name, "agent." + name} {
		if alias == agent.DefaultAlias {
			return host.Choice{Profile: name}, nil // the story's own claude agent, on the built-in path
		}
		if _, ok := st.Plugins[alias]; ok {
			return host.Choice{Profile: name, Alias: alias}, nil
		}
	}
	typ, ok := project.Backend(name)
	if !ok {
		return host.Choice{}, fmt.Errorf("--agent %s: not an agent_plugins alias of the story (%s) nor a backend (%s)",
			name, strings.Join(sortedKeys(st.Plugins), ", "), strings.Join(project.BackendNames(), ", "))
	}
	if typ == agent.PluginClaudeCLI {
		return host.Choice{Profile: name}, nil
	}
	d := agent.Declaration{Alias: project.Alias(name), Plugin: typ, Enabled: true, Dir: st.Dir, Tool: "ask", Source: "--agent " + name}
	p.Decls[d.Alias] = d
	p.resolved[name] = project.Resolved{Decl: d}
	return host.Choice{Profile: name, Alias: d.Alias}, nil
}

// Choice is the choice of a profile: a claude profile keeps the story's
// claude agent and hands it the profile's model, effort and env; any
// other goes to its own agent.
func (p *Plan) Choice(name string) (host.Choice, error) {
	r, ok := p.resolved[name]
	if !ok {
		if err, broken := p.broken[name]; broken {
			return host.Choice{}, err
		}
		return host.Choice{}, fmt.Errorf("profile %q is not declared in .kitsoki.yaml (declared: %s)", name, p.list())
	}
	d := r.Decl
	c := host.Choice{Profile: name, Quota: d.Quota, Where: d.Where()}
	if d.Plugin != agent.PluginClaudeCLI {
		c.Alias = d.Alias
		return c, nil
	}
	c.Model, c.Effort = d.Model, d.Effort
	if len(d.Env) > 0 {
		c.Provider = &agent.Provider{Name: "profile:" + name, Model: d.Model, Env: d.Env, Secrets: r.Secrets}
	}
	return c, nil
}

// Apply adds the profiles' agents to st's declarations and their
// secrets to st's, so the registry builds them and the trace masks them.
func (p *Plan) Apply(st *story.Story) {
	if st.Plugins == nil {
		st.Plugins = map[string]agent.Declaration{}
	}
	for alias, d := range p.Decls {
		st.Plugins[alias] = d
	}
	for _, s := range p.Secrets {
		if !slices.Contains(st.Secrets, s) {
			st.Secrets = append(st.Secrets, s)
		}
	}
}

// Start names the profile the run started on ("" for none).
func (p *Plan) Start() string { return p.start }

func (p *Plan) list() string {
	if len(p.cfg.Profiles) == 0 {
		return "none; declare them under profiles: in .kitsoki.yaml"
	}
	return strings.Join(sortedKeys(p.cfg.Profiles), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
