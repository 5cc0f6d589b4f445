package story

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

// textRef is a compiled text template (a view, a say:, a view element)
// that reads world keys by name, to check once every file is loaded.
type textRef struct {
	f    *file
	n    *yaml.Node
	path string
	t    *expr.Text
	// names renames the reads of a text from an imported story into the
	// importing story's world (nil: the story's own text).
	names *compose.Chain
}

// bindRef is one bind: entry of an invoke: a result path (source) or a
// template (tmpl), to check against the results its handler declares.
type bindRef struct {
	f      *file
	n      *yaml.Node
	path   string
	in     *Invoke
	source string
	tmpl   *expr.Value
}

// runtimeWritten are world keys the runtime writes besides runtimeWorld:
// last_error when a call fails, and the cost counters.
var runtimeWritten = []string{"last_error", "turn_cost_usd", "session_cost_usd"}

// writtenKeys are the world keys the story may hold at run time: declared
// ones (world:, with imports and defaults folded in), the seeded and
// runtime ones, and every key a set:, increment: or bind: writes.
func (l *loader) writtenKeys() []string {
	var names []string
	for _, w := range l.st.World {
		names = append(names, w.Name)
	}
	names = append(names, runtimeWorld...)
	names = append(names, runtimeWritten...)
	names = append(names, ideWorld.Name)
	for _, r := range l.effects {
		for _, s := range r.e.Set {
			names = append(names, s.Key)
		}
		for _, in := range r.e.Increment {
			names = append(names, in.Key)
		}
		if r.e.Invoke != nil {
			for _, b := range r.e.Invoke.Bind {
				names = append(names, b.Key)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// checkTextReads warns about a text template (view, say:, view element)
// that reads a world key the story neither declares nor writes anywhere:
// a misspelt key renders empty. Like a guard's, it is a warning (kitsoki
// validate --strict makes it an error): a key may come from outside the
// story's own YAML (a resumed world, --world).
func (l *loader) checkTextReads() {
	if len(l.texts) == 0 {
		return
	}
	names := l.writtenKeys()
	type hintKey struct {
		names *compose.Chain
		key   string
	}
	hints := map[hintKey]string{} // a read's did-you-mean, worked out once
	for _, r := range l.texts {
		for _, rd := range r.t.WorldReads() {
			key := rd.Key
			if r.names != nil {
				key, _ = r.names.WorldKey(key)
			}
			if _, ok := slices.BinarySearch(names, key); ok {
				continue
			}
			hk := hintKey{r.names, rd.Key}
			hint, ok := hints[hk]
			if !ok {
				// An imported story's text is told of its own keys, in
				// the names it writes them with.
				if r.names != nil {
					hint = didYouMean(rd.Key, r.names.OwnWorld())
				} else {
					hint = didYouMean(rd.Key, names)
				}
				hints[hk] = hint
			}
			p, ok := scalarOffsetPos(r.f, r.n, rd.Line, rd.Col)
			if !ok {
				p = posOf(r.f, r.n)
			}
			l.warns = append(l.warns, Diagnostic{Pos: p, Path: r.path,
				Message: fmt.Sprintf("the template reads world key %q, which world: does not declare and no set:, increment: or bind: writes%s; it renders empty",
					rd.Key, hint)})
		}
	}
}

// checkBinds checks each bind: source against the results its handler
// declares (internal/load/catalog for the built-in ones): a field the
// handler never returns is an error where the handler's results are
// complete (catalog.Spec.ResultsComplete), else a warning. A background
// invoke's job_id is always there. Host plugins' results are checked by
// kitsoki validate against their host.describe (internal/hosts/hostplugin).
func (l *loader) checkBinds() {
	for _, r := range l.binds {
		spec, ok := l.resultsOf(r.in)
		if !ok || len(spec.Results) == 0 || slices.ContainsFunc(spec.Results, isPlaceholder) {
			continue // no results listed, or open ones (a script's <output>)
		}
		names := make([]string, 0, len(spec.Results)+1)
		for _, f := range spec.Results {
			names = append(names, f.Name)
		}
		if r.in.Background {
			names = append(names, "job_id")
		}
		for _, rd := range bindReads(r) {
			if slices.Contains(names, rd.Key) {
				continue
			}
			p := posOf(r.f, r.n)
			if rd.Line > 0 {
				if q, ok := scalarOffsetPos(r.f, r.n, rd.Line, rd.Col); ok {
					p = q
				}
			}
			msg := fmt.Sprintf("bind reads %q, which %s does not return%s (it returns: %s)",
				rd.Key, spec.Name, didYouMean(rd.Key, names), strings.Join(names, ", "))
			if spec.ResultsComplete {
				l.diags = append(l.diags, Diagnostic{Pos: p, Path: r.path, Message: msg})
			} else {
				l.warns = append(l.warns, Diagnostic{Pos: p, Path: r.path, Message: msg + "; it may bind nothing"})
			}
		}
	}
}

// bindReads are the result fields a bind entry reads: the first step of
// its path, or the result.<key> reads of its template.
func bindReads(r bindRef) []expr.WorldRead {
	if r.tmpl != nil {
		return r.tmpl.ResultReads()
	}
	key := r.source
	if i := strings.IndexAny(key, ".["); i >= 0 {
		key = key[:i]
	}
	return []expr.WorldRead{{Key: key}}
}

// resultsOf is the built-in handler an invoke calls (through a host
// interface's default: too), when it is one.
func (l *loader) resultsOf(in *Invoke) (catalog.Spec, bool) {
	name := in.Name
	if in.NameTemplate != nil || name == "" {
		return catalog.Spec{}, false
	}
	if rest, ok := strings.CutPrefix(name, InterfaceNamespace); ok {
		iface, op, _ := strings.Cut(rest, ".")
		def, ok := l.st.Interfaces[iface]
		if !ok || def.Default == "" {
			return catalog.Spec{}, false
		}
		if op != "" {
			if s, ok := catalog.Lookup(def.Default + "." + op); ok {
				return s, true
			}
		}
		name = def.Default
	}
	if l.pluginProvides(name) || slices.Contains(l.opts.provided, name) {
		return catalog.Spec{}, false // a host plugin or the caller's handler answers
	}
	return catalog.Lookup(name)
}

// isPlaceholder reports a result the catalog names by what it stands for
// (host.starlark.run's <output>: whatever the script returns).
func isPlaceholder(f catalog.Field) bool { return strings.HasPrefix(f.Name, "<") }
