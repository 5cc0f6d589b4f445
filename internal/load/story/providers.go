package story

import (
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"go.yaml.in/yaml/v3"
)

var providerKeys = &keySpec{v1: []string{"model", "effort", "env"}}

// loadProviders reads providers: (name → model and env). A provider keeps
// the built-in claude component but points it at another
// Anthropic-compatible backend; an invoke picks one with with.provider.
// ${VAR} references in env: are resolved like agent_plugins' and every
// substituted value is recorded as a secret.
func (l *loader) loadProviders(f *file, e entry) {
	es, _ := l.entries(f, e.val, "providers")
	for _, pe := range es {
		path := joinPath("providers", pe.name)
		_, exists := l.st.Providers[pe.name]
		if !l.dup(f, pe, path, "provider", exists) {
			continue
		}
		if d := deref(pe.val); isNull(d) || (d.Kind == yaml.MappingNode && len(d.Content) == 0) {
			l.errAt(f, pe.key, path, "empty provider: give it model: and/or env:")
			continue
		}
		fs, ok := l.fields(f, pe.val, path, providerKeys)
		if !ok {
			continue
		}
		p := agent.Provider{Name: pe.name}
		strField(l, f, fs, path, "model", &p.Model)
		if ef, ok := fs.get("effort"); ok {
			strField(l, f, fs, path, "effort", &p.Effort)
			if p.Effort != "" && !slices.Contains(efforts, p.Effort) {
				l.errAt(f, ef.val, joinPath(path, "effort"), "unknown effort %q: use one of %s%s", p.Effort, strings.Join(efforts, ", "), didYouMean(p.Effort, efforts))
			}
		}
		if env, ok := fs.get("env"); ok {
			p.Env = l.interpolateMap(f, env.val, path, "env", &p.Secrets)
		}
		for _, s := range p.Secrets {
			if !slices.Contains(l.st.Secrets, s) {
				l.st.Secrets = append(l.st.Secrets, s)
			}
		}
		l.st.Providers[pe.name] = p
	}
}
