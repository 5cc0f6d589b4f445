package story

import (
	"maps"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"go.yaml.in/yaml/v3"
)

// builtinWith checks the literal with: mapping d of an invoke of a built-in
// handler against the handler table (internal/load/catalog): unknown keys
// and missing required ones are errors. For host.run it also resolves the
// ${VAR} references of with.env values, which become secrets.
func (l *loader) builtinWith(f *file, d *yaml.Node, wp, name string) {
	spec, ok := catalog.Lookup(name)
	if !ok || !spec.CheckFields {
		return
	}
	es, _ := l.entries(f, d, wp)
	if name == "host.git_worktree" {
		if spec, ok = l.worktreeOp(f, es, wp, spec); !ok {
			return
		}
	}
	have := make([]string, 0, len(es))
	for _, e := range es {
		have = append(have, e.name)
		if _, ok := spec.Field(e.name); !ok {
			names := make([]string, len(spec.Fields))
			for i, fl := range spec.Fields {
				names[i] = fl.Name
			}
			l.errAt(f, e.key, joinPath(wp, e.name), "%s has no field %q%s (fields: %s; see kitsoki hosts)",
				name, e.name, didYouMean(e.name, names), strings.Join(names, ", "))
		}
		if name == "host.run" && e.name == "env" && deref(e.val).Kind == yaml.MappingNode {
			l.hostRunEnv(f, e.val, joinPath(wp, "env"))
		}
	}
	for _, fl := range spec.Fields {
		if fl.Required && !slices.Contains(have, fl.Name) {
			l.errAt(f, d, wp, "%s needs with.%s: %s", name, fl.Name, fl.Doc)
		}
	}
	if spec.Shell != nil {
		l.shellFromSlots(f, es, wp, name, spec.Shell)
	}
}

// shellFromSlots warns about a shell command line built from what the
// user typed (slots, event): kitsoki shell-quotes each spliced value, but
// argv mode keeps user input out of the shell altogether.
func (l *loader) shellFromSlots(f *file, es []entry, wp, name string, sh *catalog.Shell) {
	var cmd *yaml.Node
	for _, e := range es {
		switch v := deref(e.val); e.name {
		case sh.Argv:
			if !isNull(e.val) {
				return // argv mode: no shell
			}
		case sh.Command:
			cmd = v
		}
	}
	if cmd == nil || cmd.Kind != yaml.ScalarNode || !isTemplated(cmd.Value) {
		return
	}
	v, err := expr.CompileValue(cmd.Value)
	if err != nil {
		return // the with: compile reports it
	}
	var from []string
	for _, r := range v.Roots() {
		if r == "slots" || r == "event" {
			from = append(from, r)
		}
	}
	if len(from) == 0 {
		return
	}
	p := joinPath(wp, sh.Command)
	if v.IsWholeExpr() {
		l.warnAt(f, cmd, p, "%s with.%s is a whole shell command line taken from what the user typed (%s): it runs as bash unquoted; give the program in with.%s and the values in with.%s (argv mode, no shell)",
			name, sh.Command, strings.Join(from, ", "), sh.Command, sh.Argv)
		return
	}
	l.warnAt(f, cmd, p, "%s with.%s is a shell command built from what the user typed (%s): each spliced value is shell-quoted, but prefer with.%s (argv mode, no shell) for user input",
		name, sh.Command, strings.Join(from, ", "), sh.Argv)
}

// hostRunEnv resolves ${VAR} in the values of host.run's with.env in place
// (before the with: tree is compiled), recording each value as a secret so
// traces and cassettes mask it.
func (l *loader) hostRunEnv(f *file, n *yaml.Node, path string) {
	es, ok := l.entries(f, n, path)
	if !ok {
		return
	}
	for _, e := range es {
		v := deref(e.val)
		if v.Kind != yaml.ScalarNode || !strings.Contains(v.Value, "${") {
			continue
		}
		res, problems := interpolate(v.Value, l.opts.lookupEnv, &l.st.Secrets)
		for _, p := range problems {
			if p.unset != "" {
				l.errAt(f, v, joinPath(path, e.name), "env var %s referenced in with.env.%s not set: export it before the run", p.unset, e.name)
			} else {
				l.errAt(f, v, joinPath(path, e.name), "%s in with.env.%s", p.malformed, e.name)
			}
		}
		v.Value, v.Tag, v.Style = res, "!!str", yaml.DoubleQuotedStyle
	}
}

// checkProvided refuses an invoke of a handler nothing provides: not
// built in (internal/load/catalog), not served by a host plugin of the
// story, not an operation of a host interface whose default: is provided,
// and not a name the caller provides (WithProvidedHandlers). A handler
// kitsoki knows but does not build (it needs a product kitsoki does not
// have) gets its own message naming the product. Under WithStubbedHosts
// (flows, viz) nothing is refused: fixtures stub handlers.
func (l *loader) checkProvided(r *effectRef) {
	in := r.e.Invoke
	if in == nil || in.Name == "" || l.opts.stubbed {
		return
	}
	if isTemplated(in.Name) {
		l.checkTemplatedName(r)
		return
	}
	at := func(format string, args ...any) {
		l.errAt(r.f, r.invokeNode, joinPath(r.path, "invoke"), "state %q: %s invoke %q: "+format,
			append([]any{r.ctx.state.Name, r.ctx.where, in.Name}, args...)...)
	}
	const fix = "declare a host plugin that serves it (host_plugins:) or remove the call (kitsoki hosts lists the handlers kitsoki provides)"
	if slices.Contains(l.opts.provided, in.Name) || l.replayed(in.Name) {
		return
	}
	if rest, ok := strings.CutPrefix(in.Name, InterfaceNamespace); ok {
		name, op, _ := strings.Cut(rest, ".")
		iface, ok := l.st.Interfaces[name]
		switch {
		case !ok:
			at("no host_interfaces: entry %q%s; declare the interface with a default: handler, or remove the call",
				name, didYouMean(name, slices.Sorted(maps.Keys(l.st.Interfaces))))
		case iface.Default == "":
			at("interface %q has no default: handler (host_interfaces.%s.default); bind it to a handler that serves it, e.g. a host plugin's, or remove the call",
				name, name)
		default:
			provider := iface.Default
			if op != "" {
				provider += "." + op
			}
			if l.provided(provider) || l.provided(iface.Default) {
				return
			}
			if u, ok := catalog.Refused(provider); ok {
				at("interface %q is bound to %s (host_interfaces.%s.default), which kitsoki does not provide (it needs %s); serve %s from a host plugin, bind the interface to a handler kitsoki provides, or remove the call",
					name, iface.Default, name, u.Needs, u.Name)
				return
			}
			at("interface %q is bound to %s (host_interfaces.%s.default), which no handler provides%s; serve it from a host plugin, bind the interface to a handler kitsoki provides, or remove the call",
				name, iface.Default, name, didYouMean(iface.Default, l.providedNames()))
		}
		return
	}
	if l.provided(in.Name) {
		return
	}
	if u, ok := catalog.Refused(in.Name); ok {
		at("kitsoki does not provide %s (it needs %s); serve it from a host plugin or remove the call (kitsoki hosts lists the handlers kitsoki provides)",
			u.Name, u.Needs)
		return
	}
	at("no handler provides %s%s: it is not built in, no host plugin serves it and it is no interface's; %s",
		in.Name, didYouMean(in.Name, l.providedNames()), fix)
}

// checkTemplatedName checks what can be checked of a templated invoke
// name before it is rendered: the literal text before its first {{ must
// begin the name of some handler the run provides ("host.{{ x }}" does;
// "hots.{{ x }}" does not). What it renders to is checked when the call is
// made: a name no handler provides fails the call (on_error catches it).
func (l *loader) checkTemplatedName(r *effectRef) {
	name := r.e.Invoke.Name
	prefix := name[:strings.Index(name, "{{")]
	if prefix == "" {
		return
	}
	var starts []string // each provided name cut to the prefix's length
	for _, p := range l.providedNames() {
		if strings.HasPrefix(p, prefix) || strings.HasPrefix(prefix, p+".") {
			return
		}
		if s := p[:min(len(p), len(prefix))]; !slices.Contains(starts, s) {
			starts = append(starts, s)
		}
	}
	if strings.HasPrefix(prefix, InterfaceNamespace) || l.pluginProvides(strings.TrimSuffix(prefix, ".")) {
		return
	}
	l.errAt(r.f, r.invokeNode, joinPath(r.path, "invoke"), "state %q: %s invoke %q: no handler the run provides begins with %q, so the name cannot render to one%s; %s",
		r.ctx.state.Name, r.ctx.where, name, prefix, didYouMean(prefix, starts),
		"fix the text before {{ (kitsoki hosts lists the handlers kitsoki provides)")
}

// provided reports whether a handler answers invoke name in a run: a
// built-in one, a host plugin of the story, or one the caller provides.
func (l *loader) provided(name string) bool {
	if _, ok := catalog.Lookup(name); ok {
		return true
	}
	return slices.Contains(l.opts.provided, name) || l.replayed(name) || l.pluginProvides(name)
}

// replayed reports whether a cassette's handler (WithReplayedHandlers)
// answers name: exactly or as a dotted prefix.
func (l *loader) replayed(name string) bool {
	return slices.ContainsFunc(l.opts.replayed, func(p string) bool { return name == p || strings.HasPrefix(name, p+".") })
}

// providedNames are the handler names a did-you-mean picks from: the
// built-in ones, the story's host plugins and interfaces, the caller's.
func (l *loader) providedNames() []string {
	var out []string
	for _, s := range catalog.Builtins() {
		out = append(out, s.Name)
	}
	out = append(out, l.st.HostPluginNames()...)
	for _, n := range slices.Sorted(maps.Keys(l.st.Interfaces)) {
		out = append(out, InterfaceNamespace+n)
	}
	out = append(out, l.opts.provided...)
	return append(out, l.opts.replayed...)
}

// pluginProvides reports whether a host plugin of the story serves name
// (host_plugins: host.jira serves host.jira and every name under it).
func (l *loader) pluginProvides(name string) bool {
	_, ok := l.st.HostPluginFor(name)
	return ok
}

// worktreeOp narrows the fields of host.git_worktree to those of the op a
// literal with.op names (host.git_worktree.<op>), so a key another op takes
// is refused too. A templated op keeps the union of every op's fields; an
// unknown literal op is an error, and ok is false.
func (l *loader) worktreeOp(f *file, es []entry, wp string, spec catalog.Spec) (catalog.Spec, bool) {
	for _, e := range es {
		v := deref(e.val)
		if e.name != "op" || v.Kind != yaml.ScalarNode || isTemplated(v.Value) {
			continue
		}
		sub, ok := catalog.Lookup(spec.Name + "." + v.Value)
		if !ok {
			var ops []string
			for _, b := range catalog.Builtins() {
				if op, ok := strings.CutPrefix(b.Name, spec.Name+"."); ok {
					ops = append(ops, op)
				}
			}
			l.errAt(f, v, joinPath(wp, "op"), "%s has no op %q%s (ops: %s; see kitsoki hosts)", spec.Name, v.Value, didYouMean(v.Value, ops), strings.Join(ops, ", "))
			return spec, false
		}
		op, _ := spec.Field("op")
		sub.Fields = append([]catalog.Field{op}, sub.Fields...)
		return sub, true
	}
	return spec, true
}
