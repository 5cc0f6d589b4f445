package story

import (
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// finishImports checks what needs the whole story (alias collisions,
// exported intents, hosts: declared) and marks the wrapper states.
func (l *loader) finishImports() {
	if len(l.exitToChecks) > 0 {
		states := make(map[string]bool, len(l.st.States))
		for k := range l.st.States {
			states[k] = true
		}
		exits := map[string]*yaml.Node{}
		for k := range l.st.Exits {
			exits[k] = nil
		}
		for _, ref := range l.exitToChecks {
			l.checkExitTo(ref, states, exits)
		}
	}
	for _, x := range l.exportChecks {
		if l.st.Intents[x.value] == nil {
			names := make([]string, 0, len(l.st.Intents))
			for k := range l.st.Intents {
				names = append(names, k)
			}
			sort.Strings(names)
			l.errAt(x.f, x.n, x.path, "cannot export intent %q: this story declares no such intent%s", x.value, didYouMean(x.value, names))
		}
	}
	for _, hc := range l.hostChecks {
		have := l.rootHosts
		if hc.u != nil {
			have = hc.u.own
		}
		var missing []string
		for _, h := range hc.hosts {
			if !slices.Contains(have, h) {
				missing = append(missing, h)
			}
		}
		if len(missing) > 0 {
			l.errAt(hc.f, hc.n, hc.path, "hosts: declared, but the imported story %s uses hosts this story does not list: %s (add them to hosts:, or drop hosts: declared)", hc.alias, strings.Join(missing, ", "))
		}
	}
	vars := make(map[string]*WorldVar, len(l.st.World))
	for _, v := range l.st.World {
		vars[v.Name] = v
	}
	for name, w := range l.wrappers {
		st := l.st.States[name]
		if st == nil {
			continue
		}
		st.Import = &Import{Alias: w.alias, Source: w.source, Version: w.version, Entry: w.entry, Intents: w.intents, Fallback: w.fallback}
		for _, k := range w.world {
			if v := vars[k]; v != nil {
				st.Import.World = append(st.Import.World, v)
			}
		}
	}
	// An entry that is itself an import enters that import's entry.
	for _, st := range l.st.States {
		if st.Import == nil {
			continue
		}
		for range 32 {
			e := l.st.States[st.Import.Entry]
			if e == nil || e.Import == nil || e == st {
				break
			}
			st.Import.Entry = e.Import.Entry
		}
	}
}

// loadExports checks a story's own exports: (the intents an importer may
// lift into its table with intents.import).
func (l *loader) loadExports(f *file, e entry) {
	fs, ok := l.fields(f, e.val, "exports", exportsKeys)
	if !ok {
		return
	}
	if x, ok := fs.get("intents"); ok {
		items, _ := l.list(f, x.val, "exports.intents")
		for i, it := range items {
			p := indexPath("exports.intents", i)
			if s, ok := l.str(f, it, p); ok {
				l.exportRefs = append(l.exportRefs, nodeRef{f: f, n: deref(it), path: p, value: s})
			}
		}
	}
}

func (l *loader) checkExports() {
	for _, x := range l.exportRefs {
		if l.st.Intents[x.value] == nil {
			names := make([]string, 0, len(l.st.Intents))
			for k := range l.st.Intents {
				names = append(names, k)
			}
			sort.Strings(names)
			l.errAt(x.f, x.n, x.path, "exports.intents names %q, which is not a declared intent%s", x.value, didYouMean(x.value, names))
		}
	}
}
