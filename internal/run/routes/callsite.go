package routes

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// CallSite is a host.agent.* invoke that an eval can target and a pin can
// route (eval-format.md
// §3). The JSON form is what `kitsoki eval run --json` prints.
type CallSite struct {
	Call         string `json:"call"`
	Handler      string `json:"handler"`
	Agent        string `json:"agent"`
	PromptPath   string `json:"prompt_path"`
	SchemaPath   string `json:"schema_path"`
	SchemaName   string `json:"schema_name"`
	EffectIndex  int    `json:"effect_index"`
	StatePath    string `json:"state_path"`
	SelectionRef string `json:"selection_ref"`
	// Plugin is the invoke's agent: alias ("" for the built-in claude
	// path). It is ours, not Kitsoki's, so it stays out of the JSON, whose
	// shape is the spec's (eval-format.md §3, §7).
	Plugin string `json:"-"`

	// Invoke is the effect's invoke in the loaded story.
	Invoke *story.Invoke `json:"-"`
	// With is the invoke's with: block as written in the source (templates
	// unrendered), nil when it has none.
	With map[string]any `json:"-"`
}

// siteRef is one agent invoke found by the walk, before its with: is read.
type siteRef struct {
	state string
	index int
	eff   *story.Effect
}

// walkAllInvokes lists every invoke, agent or not, in call-site order.
func walkAllInvokes(st *story.Story) []siteRef {
	var out []siteRef
	add := func(state string, effs []*story.Effect) {
		for i, e := range effs {
			if e.Invoke != nil {
				out = append(out, siteRef{state: state, index: i, eff: e})
			}
		}
	}
	for _, n := range sortedKeys(st.States) {
		s := st.States[n]
		add(n, s.OnEnter)
		for _, in := range sortedKeys(s.On) {
			for _, arm := range s.On[in] {
				add(n, arm.Effects)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// walkAgentInvokes lists every host.agent.* invoke in the order of §3:
// states by sorted name, each state's on_enter effects, then the effects of
// every arm (intents sorted by name, arms in order).
func walkAgentInvokes(st *story.Story) []siteRef {
	var out []siteRef
	for _, r := range walkAllInvokes(st) {
		if strings.HasPrefix(r.eff.Invoke.Name, "host.agent.") {
			out = append(out, r)
		}
	}
	return out
}

// FindCallSite returns the first host.agent.* invoke whose id: is call.
func FindCallSite(st *story.Story, call string) (*CallSite, error) {
	src := newSourceCache(st.Dir)
	for _, r := range walkAgentInvokes(st) {
		if r.eff.Invoke.ID == call {
			return src.site(r)
		}
	}
	return nil, fmt.Errorf("call site %q not found; add id: %s to the target host.agent.* invoke", call, call)
}

// sourceCache parses each story file at most once to read with: blocks as
// written.
type sourceCache struct {
	dir   string
	files map[string]*yaml.Node
}

func newSourceCache(dir string) *sourceCache {
	return &sourceCache{dir: dir, files: map[string]*yaml.Node{}}
}

// site builds the call site of a walked invoke.
func (c *sourceCache) site(r siteRef) (*CallSite, error) {
	inv := r.eff.Invoke
	cs := &CallSite{Call: inv.ID, Handler: inv.Name, EffectIndex: r.index, StatePath: r.state, Plugin: inv.Agent, Invoke: inv}
	if ev, ok := inv.Selection["evidence"].(string); ok {
		cs.SelectionRef = ev
	}
	if inv.With == nil {
		return cs, nil
	}
	with, err := c.with(r.eff)
	if err != nil {
		return nil, fmt.Errorf("call site %q: %w", inv.ID, err)
	}
	cs.With = with
	cs.Agent, _ = with["agent"].(string)
	if p, ok := with["prompt_path"].(string); ok && p != "" {
		cs.PromptPath = p
	} else {
		cs.PromptPath, _ = with["prompt"].(string)
	}
	cs.SchemaPath, _ = with["schema"].(string)
	if cs.SchemaPath != "" {
		cs.SchemaName = path.Base(filepath.ToSlash(cs.SchemaPath))
	}
	return cs, nil
}

// with reads the effect's with: mapping from its source file, templates
// and all: the loaded story only keeps it compiled.
func (c *sourceCache) with(eff *story.Effect) (map[string]any, error) {
	doc, err := c.file(eff.Pos.File)
	if err != nil {
		return nil, err
	}
	n := findMapping(doc, eff.Pos.Line, eff.Pos.Col)
	if n == nil {
		return nil, fmt.Errorf("%s:%d:%d: cannot find the invoke's mapping in the source", eff.Pos.File, eff.Pos.Line, eff.Pos.Col)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "with" {
			continue
		}
		var m map[string]any
		if err := n.Content[i+1].Decode(&m); err != nil {
			return nil, fmt.Errorf("%s:%d:%d: with: %w", eff.Pos.File, eff.Pos.Line, eff.Pos.Col, err)
		}
		return m, nil
	}
	return nil, nil
}

func (c *sourceCache) file(rel string) (*yaml.Node, error) {
	if n, ok := c.files[rel]; ok {
		return n, nil
	}
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.dir, filepath.FromSlash(rel))
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read story source: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse story source %s: %w", rel, err)
	}
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return nil, fmt.Errorf("parse story source %s: %w", rel, err)
	}
	c.files[rel] = &doc
	return &doc, nil
}

// findMapping returns the mapping node that starts at line:col.
func findMapping(n *yaml.Node, line, col int) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode && n.Line == line && n.Column == col {
		return n
	}
	for _, c := range n.Content {
		if m := findMapping(c, line, col); m != nil {
			return m
		}
	}
	return nil
}
