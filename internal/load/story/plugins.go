package story

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"go.yaml.in/yaml/v3"
)

var pluginKeys = &keySpec{v1: []string{
	"plugin", "command", "args", "env", "endpoint", "tool", "headers", "model", "grammar", "port",
	"server_bin", "api_key_env", "json_schema", "enabled", "agent_tools", "manifest",
	"base_url", "api", "stream", "max_tokens", "max_turns", "effort", "timeout", "retries", "sandbox", "approval", "pricing",
}}

// loadPlugins reads agent_plugins: as wire-protocols.md §1 says. ${VAR}
// references in env: and headers: are resolved here, once, and every
// substituted value is recorded as a secret.
func (l *loader) loadPlugins(f *file, e entry) {
	es, _ := l.entries(f, e.val, "agent_plugins")
	for _, pe := range es {
		path := joinPath("agent_plugins", pe.name)
		if !strings.HasPrefix(pe.name, "agent.") {
			l.errAt(f, pe.key, "agent_plugins", "key %q must start with 'agent.' prefix", pe.name)
			continue
		}
		_, exists := l.st.Plugins[pe.name]
		if !l.dup(f, pe, path, "agent_plugins", exists) {
			continue
		}
		if d := deref(pe.val); isNull(d) || (d.Kind == yaml.MappingNode && len(d.Content) == 0) {
			l.errAt(f, pe.key, path, "empty declaration")
			continue
		}
		fs, ok := l.fields(f, pe.val, path, pluginKeys)
		if !ok {
			continue
		}
		d := agent.Declaration{Alias: pe.name, Enabled: true, Dir: l.dir}
		strField(l, f, fs, path, "plugin", &d.Plugin)
		strField(l, f, fs, path, "command", &d.Command)
		strListField(l, f, fs, path, "args", &d.Args)
		strField(l, f, fs, path, "endpoint", &d.Endpoint)
		strField(l, f, fs, path, "tool", &d.Tool)
		strField(l, f, fs, path, "model", &d.Model)
		boolField(l, f, fs, path, "grammar", &d.Grammar)
		strField(l, f, fs, path, "server_bin", &d.ServerBin)
		strField(l, f, fs, path, "api_key_env", &d.APIKeyEnv)
		boolField(l, f, fs, path, "json_schema", &d.JSONSchema)
		boolField(l, f, fs, path, "enabled", &d.Enabled)
		l.loadBackendKeys(f, fs, path, &d)
		if p, ok := fs.get("port"); ok {
			if i, ok := l.integer(f, p.val, joinPath(path, "port")); ok {
				if i < 0 || i > 65535 {
					l.errAt(f, p.val, joinPath(path, "port"), "port %d is out of range 0-65535", i)
				}
				d.Port = int(i)
			}
		}
		if d.Tool == "" {
			d.Tool = "ask"
		}
		if env, ok := fs.get("env"); ok {
			d.Env = l.interpolateMap(f, env.val, path, "env", &d.Secrets)
		}
		if h, ok := fs.get("headers"); ok {
			d.Headers = l.interpolateMap(f, h.val, path, "headers", &d.Secrets)
		}
		l.checkPluginType(f, pe, fs, path, &d)
		l.loadAgentTools(f, fs, path, &d)
		for _, s := range d.Secrets {
			if !slices.Contains(l.st.Secrets, s) {
				l.st.Secrets = append(l.st.Secrets, s)
			}
		}
		l.st.Plugins[pe.name] = d
	}
}

// checkPluginType checks plugin: and the fields its type requires.
func (l *loader) checkPluginType(f *file, pe entry, fs fieldSet, path string, d *agent.Declaration) {
	pl, ok := fs.get("plugin")
	if !ok || d.Plugin == "" {
		at := pe.key
		if ok {
			at = pl.val
		}
		l.errAt(f, at, path, "plugin: is required")
		return
	}
	l.checkBackendKeys(f, fs, path, d)
	switch d.Plugin {
	case agent.PluginClaudeCLI, agent.PluginInProcess, agent.PluginAnthropic, agent.PluginOpenAI, agent.PluginCodexCLI, agent.PluginCopilotCLI:
	case agent.PluginSubprocess:
		if d.Command == "" {
			l.errAt(f, pe.key, path, "subprocess plugin requires command:")
		}
	case agent.PluginMCPHTTP:
		if d.Endpoint == "" {
			l.errAt(f, pe.key, path, "mcp_http plugin requires endpoint:")
		}
	case agent.PluginLocalLLM:
		if d.Model == "" && d.Endpoint == "" {
			l.errAt(f, pe.key, path, "builtin.local_llm plugin requires model: or endpoint:")
		}
	case "cassette":
		l.errAt(f, pl.val, path, "plugin \"cassette\" cannot be declared in agent_plugins: a cassette replays a run instead (kitsoki run --cassette FILE, a flow's host_cassette:, or kitsoki.WithCassette in Go tests)")
	default:
		l.errAt(f, pl.val, path, "unknown plugin %q (supported: %s)", d.Plugin, strings.Join(agent.PluginTypes, ", "))
	}
}

// interpolateMap reads a string map (env: or headers:) and resolves ${VAR}
// references in its values. Errors name the map and key (env.KEY).
func (l *loader) interpolateMap(f *file, n *yaml.Node, path, field string, secrets *[]string) map[string]string {
	es, ok := l.entries(f, n, joinPath(path, field))
	if !ok {
		return nil
	}
	out := make(map[string]string, len(es))
	for _, e := range es {
		raw, ok := l.str(f, e.val, joinPath(path, field+"."+e.name))
		if !ok {
			continue
		}
		where := field + "." + e.name
		res, problems := interpolate(raw, l.opts.lookupEnv, secrets)
		for _, p := range problems {
			if p.unset != "" {
				l.errAt(f, e.val, path, "env var %s referenced in %s not set", p.unset, where)
			} else {
				l.errAt(f, e.val, path, "%s in %s", p.malformed, where)
			}
		}
		out[e.name] = res
	}
	return out
}

// interpProblem is an unset variable or a malformed reference.
type interpProblem struct {
	unset     string
	malformed string
}

// interpolate substitutes ${NAME} references in s in a single left-to-right
// pass: substituted text is never scanned again, so a value containing "${"
// passes through verbatim. Each non-empty substituted value is appended to
// secrets (once). A reference without a closing brace, or whose name is not
// [A-Za-z_][A-Za-z0-9_]*, is a problem, as is an unset variable.
func interpolate(s string, lookup func(string) (string, bool), secrets *[]string) (string, []interpProblem) {
	var b strings.Builder
	var problems []interpProblem
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			problems = append(problems, interpProblem{malformed: "unterminated ${ reference (missing })"})
			b.WriteString(s[i:])
			break
		}
		name := rest[:j]
		s = rest[j+1:]
		if !validVarName(name) {
			problems = append(problems, interpProblem{malformed: fmt.Sprintf("invalid variable name %q in ${...} reference", name)})
			continue
		}
		v, ok := lookup(name)
		if !ok {
			problems = append(problems, interpProblem{unset: name})
			continue
		}
		b.WriteString(v)
		if v != "" && !slices.Contains(*secrets, v) {
			*secrets = append(*secrets, v)
		}
	}
	return b.String(), problems
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// injectDefaultPlugin adds agent.claude when no file declared it.
func (l *loader) injectDefaultPlugin() {
	if _, ok := l.st.Plugins[agent.DefaultAlias]; !ok {
		l.st.Plugins[agent.DefaultAlias] = agent.Declaration{
			Alias: agent.DefaultAlias, Plugin: agent.PluginClaudeCLI, Tool: "ask", Enabled: true, Dir: l.dir,
		}
		l.st.DefaultPluginInjected = true
	}
}
