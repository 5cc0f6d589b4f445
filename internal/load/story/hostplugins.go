package story

import (
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// HostPlugin is a host_plugins: entry: a program that answers every invoke
// under its name (host.tickets answers host.tickets.<op>) over the
// subprocess JSON-RPC transport, method host.invoke (docs/plugins.md, "Host
// plugins").
type HostPlugin struct {
	Name    string // the handler name, e.g. host.tickets
	Plugin  string // "subprocess", the only type
	Command string // a path (resolved, inside the workspace) or a bare name looked up in PATH
	Args    []string
	Env     map[string]string // ${VAR} resolved
	Dir     string            // the story directory: the plugin's working directory
	// Timeout is the hard deadline of one call; 0 means the default
	// (hosts/plugin.DefaultTimeout).
	Timeout time.Duration
	// Secrets are the values substituted from ${VAR} in env:; they are in
	// Story.Secrets too.
	Secrets []string
	Pos     Pos // of the entry's key
}

// HostPluginPlugins are the plugin: types a host plugin may name.
var HostPluginPlugins = []string{"subprocess"}

var hostPluginKeys = &keySpec{v1: []string{"plugin", "command", "args", "env", "timeout"}}

// loadHostPlugins reads host_plugins:. Names are host.<name> (not
// host.agent, whose verbs are built in); command: is resolved against the
// story directory when it is a path and must stay inside the workspace.
func (l *loader) loadHostPlugins(f *file, e entry) {
	es, _ := l.entries(f, e.val, "host_plugins")
	if l.st.HostPlugins == nil {
		l.st.HostPlugins = map[string]*HostPlugin{}
	}
	for _, pe := range es {
		path := joinPath("host_plugins", pe.name)
		switch {
		case !strings.HasPrefix(pe.name, "host.") || len(pe.name) == len("host.") || strings.HasSuffix(pe.name, "."):
			l.errAt(f, pe.key, "host_plugins", "key %q must be a handler name under host. (e.g. host.tickets)", pe.name)
			continue
		case pe.name == "host.agent" || strings.HasPrefix(pe.name, AgentHostPrefix):
			l.errAt(f, pe.key, "host_plugins", "key %q is reserved: the host.agent.* verbs are built in; name the plugin e.g. host.%s",
				pe.name, strings.TrimPrefix(strings.TrimPrefix(pe.name, "host.agent"), "."))
			continue
		}
		if b, ok := shadowsBuiltin(pe.name); ok {
			l.errAt(f, pe.key, "host_plugins", "key %q would replace kitsoki's own %s (see kitsoki hosts); name the plugin e.g. host.my_%s",
				pe.name, b, strings.TrimPrefix(pe.name, "host."))
			continue
		}
		_, exists := l.st.HostPlugins[pe.name]
		if !l.dup(f, pe, path, "host_plugins", exists) {
			continue
		}
		if d := deref(pe.val); isNull(d) || (d.Kind == yaml.MappingNode && len(d.Content) == 0) {
			l.errAt(f, pe.key, path, "empty declaration (write plugin: subprocess and command:)")
			continue
		}
		fs, ok := l.fields(f, pe.val, path, hostPluginKeys)
		if !ok {
			continue
		}
		hp := HostPlugin{Name: pe.name, Dir: l.dir, Pos: l.pos(f, pe.key)}
		strField(l, f, fs, path, "plugin", &hp.Plugin)
		strField(l, f, fs, path, "command", &hp.Command)
		strListField(l, f, fs, path, "args", &hp.Args)
		if pl, ok := fs.get("plugin"); !ok || hp.Plugin == "" {
			at := pe.key
			if ok {
				at = pl.val
			}
			l.errAt(f, at, path, "plugin: is required (plugin: subprocess)")
		} else if !slices.Contains(HostPluginPlugins, hp.Plugin) {
			l.errAt(f, pl.val, joinPath(path, "plugin"), "unknown host plugin type %q (supported: %s)%s",
				hp.Plugin, strings.Join(HostPluginPlugins, ", "), didYouMean(hp.Plugin, HostPluginPlugins))
		}
		if c, ok := fs.get("command"); !ok || hp.Command == "" {
			at := pe.key
			if ok {
				at = c.val
			}
			l.errAt(f, at, path, "subprocess host plugin requires command:")
		} else if strings.ContainsRune(filepath.ToSlash(hp.Command), '/') {
			real, err := l.ws.Resolve(l.dir, hp.Command)
			if err != nil {
				l.errAt(f, deref(c.val), joinPath(path, "command"), "command %v; a host plugin's command must be inside the workspace, or a bare name found in PATH",
					renamed(err, hp.Command))
			} else {
				hp.Command = real
			}
		}
		if t, ok := fs.get("timeout"); ok {
			if s, ok := l.str(f, t.val, joinPath(path, "timeout")); ok {
				d, err := time.ParseDuration(s)
				if err != nil || d <= 0 {
					l.errAt(f, deref(t.val), joinPath(path, "timeout"), "timeout %q is not a positive duration (write e.g. 30s or 2m)", s)
				}
				hp.Timeout = d
			}
		}
		if env, ok := fs.get("env"); ok {
			hp.Env = l.interpolateMap(f, env.val, path, "env", &hp.Secrets)
		}
		for _, s := range hp.Secrets {
			if !slices.Contains(l.st.Secrets, s) {
				l.st.Secrets = append(l.st.Secrets, s)
			}
		}
		l.st.HostPlugins[pe.name] = &hp
	}
}

// AgentHostPrefix is the prefix of the built-in agent verbs' invoke names.
const AgentHostPrefix = "host.agent."

// HostPluginFor returns the host plugin that answers invoke name: the
// longest declared host plugin name that is name itself or a dotted prefix
// of it.
func (st *Story) HostPluginFor(name string) (*HostPlugin, bool) {
	for p := name; strings.Contains(p, "."); p = p[:strings.LastIndexByte(p, '.')] {
		if hp, ok := st.HostPlugins[p]; ok {
			return hp, true
		}
	}
	return nil, false
}

// HostPluginNames lists the declared host plugins, sorted.
func (st *Story) HostPluginNames() []string {
	out := make([]string, 0, len(st.HostPlugins))
	for n := range st.HostPlugins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// hostPluginProvides reports whether a host plugin answers invoke name, so
// the hosts: allow-list need not repeat it.
func (l *loader) hostPluginProvides(name string) bool {
	_, ok := l.st.HostPluginFor(name)
	return ok
}

// DidYouMean returns ` (did you mean "x"?)` for the candidate closest to
// name, or "" when none is close: the loader's suggestion, for checks made
// outside it.
func DidYouMean(name string, candidates []string) string { return didYouMean(name, candidates) }

// shadowsBuiltin returns the built-in handler a host plugin named name would
// answer in its place: the plugin serves name and every name under it, so
// host.artifacts_dir would take host.artifacts_dir.list too.
func shadowsBuiltin(name string) (string, bool) {
	for _, b := range catalog.Builtins() {
		if b.Name == name || strings.HasPrefix(b.Name, name+".") {
			return b.Name, true
		}
	}
	return "", false
}
