package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
)

// Builder turns a declaration into an Agent. Builders must not start
// processes or open connections: transports do that lazily on the first Ask.
type Builder func(decl Declaration, env BuildEnv) (Agent, error)

// Registry resolves agent aliases to agents. It holds the transport builders
// (by plugin type), the story's declarations, and agents registered from code
// (in-process agents, cassettes). Agents are built on first use and closed
// by Close. A Registry is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	builders map[string]Builder
	decls    map[string]Declaration
	code     map[string]Agent // Register / RegisterInProcess
	built    map[string]Agent
	logger   *slog.Logger
	closed   bool
}

// NewRegistry returns an empty registry. Transport packages add their
// builders with RegisterTransport.
func NewRegistry(logger *slog.Logger) *Registry {
	if logger == nil {
		logger = slog.Default()
	}
	return &Registry{
		builders: map[string]Builder{},
		decls:    map[string]Declaration{},
		code:     map[string]Agent{},
		built:    map[string]Agent{},
		logger:   logger,
	}
}

// RegisterTransport installs the builder for a plugin type.
func (r *Registry) RegisterTransport(pluginType string, b Builder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.builders[pluginType] = b
}

// Configure installs a story's declarations, replacing earlier ones.
func (r *Registry) Configure(decls map[string]Declaration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decls = make(map[string]Declaration, len(decls))
	for alias, d := range decls {
		d.Alias = alias
		r.decls[alias] = d
	}
}

// Reconfigure installs the declarations of a reloaded story, like
// Configure, and closes the agents built from declarations that changed
// (in anything but Enabled) or disappeared, so their next use builds from
// the new declaration: a changed plugin gets a new process. Agents
// registered from code are kept. It returns the aliases whose agents were
// closed, sorted.
func (r *Registry) Reconfigure(decls map[string]Declaration) []string {
	r.mu.Lock()
	old := r.decls
	r.decls = make(map[string]Declaration, len(decls))
	for alias, d := range decls {
		d.Alias = alias
		r.decls[alias] = d
	}
	var stale []Agent
	var aliases []string
	for alias, a := range r.built {
		prev, next := old[alias], r.decls[alias]
		prev.Enabled, next.Enabled = true, true
		if _, still := r.decls[alias]; still && reflect.DeepEqual(prev, next) {
			continue
		}
		stale = append(stale, a)
		aliases = append(aliases, alias)
		delete(r.built, alias)
	}
	r.mu.Unlock()
	for _, a := range stale {
		if err := a.Close(); err != nil {
			r.logger.Warn("closing a reconfigured agent failed", "err", err)
		}
	}
	sort.Strings(aliases)
	return aliases
}

// Declaration returns the declaration for alias, if any.
func (r *Registry) Declaration(alias string) (Declaration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.decls[alias]
	return d, ok
}

// Register binds alias to an agent built in code, whatever the story
// declares for it. Tests use it for cassettes and scripted agents.
func (r *Registry) Register(alias string, a Agent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.code[alias] = a
}

// RegisterInProcess supplies the implementation of a builtin.inprocess
// alias. It is Register under the name the contract uses.
func (r *Registry) RegisterInProcess(alias string, a Agent) { r.Register(alias, a) }

// Aliases lists every alias the registry can resolve, sorted.
func (r *Registry) Aliases() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for a := range r.decls {
		seen[a] = true
	}
	for a := range r.code {
		seen[a] = true
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ErrUnknownAlias is returned (wrapped) by Get for an alias that is neither
// declared nor registered.
var ErrUnknownAlias = errors.New("unknown agent alias")

// Get returns the agent for alias, building it on first use.
func (r *Registry) Get(alias string) (Agent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("agent registry is closed")
	}
	if a, ok := r.code[alias]; ok {
		return a, nil
	}
	if a, ok := r.built[alias]; ok {
		return a, nil
	}
	d, ok := r.decls[alias]
	if !ok {
		return nil, fmt.Errorf("%w %q (declare it under agent_plugins:)", ErrUnknownAlias, alias)
	}
	var a Agent
	switch b, ok := r.builders[d.Plugin]; {
	case d.Plugin == PluginInProcess:
		a = unavailable{Errorf(KindTransportError, "builtin.inprocess agent %q has no implementation: register one from Go code with Registry.RegisterInProcess", alias)}
	case !ok:
		a = unavailable{Errorf(KindTransportError, "plugin %q (alias %q) is not available in this build", d.Plugin, alias)}
	default:
		built, err := b(d, BuildEnv{Logger: r.logger.With("agent", alias)})
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", alias, err)
		}
		a = built
	}
	r.built[alias] = a
	return a, nil
}

// Close closes every agent the registry built or was given, once. Errors
// are joined.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	agents := make([]Agent, 0, len(r.built)+len(r.code))
	for _, a := range r.built {
		agents = append(agents, a)
	}
	for _, a := range r.code {
		agents = append(agents, a)
	}
	r.mu.Unlock()
	var errs []error
	for _, a := range agents {
		if err := a.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unavailable answers every call with the same error: a transport that this
// build does not have, or an in-process alias nobody registered.
type unavailable struct{ err *AskError }

func (u unavailable) Ask(context.Context, *Call) (*AskResponse, error) { return nil, u.err }
func (unavailable) Close() error                                       { return nil }
