package story

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// backendKeyTypes are the keys of the API backends and the agent CLIs
// and the plugin types that take each (shared with .kitsoki.yaml's
// profiles).
var backendKeyTypes = agent.BackendKeyTypes

var pricingKeys = &keySpec{v1: []string{"input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok"}}

// MaxRetries bounds retries:.
const MaxRetries = 10

// loadBackendKeys reads the keys of backendKeyTypes into d.
func (l *loader) loadBackendKeys(f *file, fs fieldSet, path string, d *agent.Declaration) {
	strField(l, f, fs, path, "base_url", &d.BaseURL)
	strField(l, f, fs, path, "api", &d.API)
	strField(l, f, fs, path, "effort", &d.Effort)
	strField(l, f, fs, path, "sandbox", &d.Sandbox)
	strField(l, f, fs, path, "approval", &d.Approval)
	if e, ok := fs.get("stream"); ok {
		if b, ok := l.boolean(f, e.val, joinPath(path, "stream")); ok {
			d.Stream = &b
		}
	}
	d.MaxTokens = l.positive(f, fs, path, "max_tokens", 1<<20)
	d.MaxTurns = l.positive(f, fs, path, "max_turns", 1000)
	if e, ok := fs.get("retries"); ok {
		p := joinPath(path, "retries")
		if n, ok := l.integer(f, e.val, p); ok {
			if n < 0 || n > MaxRetries {
				l.errAt(f, e.val, p, "retries must be 0 to %d (how often a refused or failed request is sent again), got %d", MaxRetries, n)
			}
			v := int(n)
			d.Retries = &v
		}
	}
	if e, ok := fs.get("timeout"); ok {
		d.Timeout, _ = l.duration(f, e.val, joinPath(path, "timeout"))
	}
	if e, ok := fs.get("pricing"); ok {
		d.Pricing = l.pricing(f, e.val, joinPath(path, "pricing"))
	}
}

// positive reads an optional integer key from 1 to limit.
func (l *loader) positive(f *file, fs fieldSet, path, key string, limit int64) int {
	e, ok := fs.get(key)
	if !ok {
		return 0
	}
	p := joinPath(path, key)
	n, ok := l.integer(f, e.val, p)
	if !ok {
		return 0
	}
	if n < 1 || n > limit {
		l.errAt(f, e.val, p, "%s must be from 1 to %d, got %d", key, limit, n)
		return 0
	}
	return int(n)
}

// pricing reads pricing: {input_per_mtok, output_per_mtok,
// cache_read_per_mtok, cache_write_per_mtok}, dollars per million tokens.
func (l *loader) pricing(f *file, n *yaml.Node, path string) *agent.Pricing {
	fs, ok := l.fields(f, n, path, pricingKeys)
	if !ok {
		return nil
	}
	p := &agent.Pricing{}
	for key, dst := range map[string]*float64{"input_per_mtok": &p.InputPerMTok, "output_per_mtok": &p.OutputPerMTok,
		"cache_read_per_mtok": &p.CacheReadPerMTok, "cache_write_per_mtok": &p.CacheWritePerMTok} {
		if e, ok := fs.get(key); ok {
			*dst = l.dollars(f, e.val, joinPath(path, key))
		}
	}
	if _, ok := fs.get("input_per_mtok"); !ok {
		l.errAt(f, deref(n), path, "pricing needs input_per_mtok and output_per_mtok (US dollars per million tokens)")
	} else if _, ok := fs.get("output_per_mtok"); !ok {
		l.errAt(f, deref(n), path, "pricing needs input_per_mtok and output_per_mtok (US dollars per million tokens)")
	}
	return p
}

// dollars reads a non-negative number.
func (l *loader) dollars(f *file, n *yaml.Node, path string) float64 {
	d := deref(n)
	var v float64
	if d == nil || d.Kind != yaml.ScalarNode || (d.Tag != "!!int" && d.Tag != "!!float") || d.Decode(&v) != nil || v < 0 {
		l.errAt(f, n, path, "%s must be a number of US dollars per million tokens (0 or more)", lastSeg(path))
		return 0
	}
	return v
}

// checkBackendKeys refuses a key of backendKeyTypes on a plugin type that
// does not take it, and values a type does not know.
func (l *loader) checkBackendKeys(f *file, fs fieldSet, path string, d *agent.Declaration) {
	keys := make([]string, 0, len(backendKeyTypes))
	for k := range backendKeyTypes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		types := backendKeyTypes[key]
		e, ok := fs.get(key)
		if !ok || slices.Contains(types, d.Plugin) || !slices.Contains(agent.PluginTypes, d.Plugin) {
			continue
		}
		l.errAt(f, e.key, joinPath(path, key), "%s: does not apply to %s (it is a key of %s); remove it", key, d.Plugin, strings.Join(types, ", "))
	}
	for _, key := range []string{"api", "sandbox", "approval"} {
		val := map[string]string{"api": d.API, "sandbox": d.Sandbox, "approval": d.Approval}[key]
		allowed := agent.BackendValues(d.Plugin, key)
		if val == "" || allowed == nil || slices.Contains(allowed, val) {
			continue
		}
		e, _ := fs.get(key)
		l.errAt(f, e.val, joinPath(path, key), "%s %q: %s takes %s", key, val, d.Plugin, strings.Join(allowed, ", "))
	}
}
