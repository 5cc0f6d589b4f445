package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"github.com/kitsoki/kitsoki/internal/hosts/hostplugin"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/plugin"
	"github.com/spf13/cobra"
)

func newHostsCmd(g *globals) *cobra.Command {
	var storyPath string
	cmd := &cobra.Command{
		Use:   "hosts [NAME]",
		Short: "List the invoke handlers kitsoki provides: name, with: fields, result fields",
		Long: "List every invoke handler kitsoki provides with its with: fields and the result fields bind: reads,\n" +
			"then the handlers kitsoki knows of but does not build (a story invoking one is refused at load\n" +
			"unless a host plugin serves it). See docs/hosts.md.\n\n" +
			"With --story FILE the story is loaded and its own host_plugins: are listed after them: each\n" +
			"plugin is started once and asked host.describe, and its ops are shown with their descriptions\n" +
			"and the with: fields of their args_schema (docs/plugins.md).\n\n" +
			"NAME lists only that handler, or with a prefix every handler under it: `kitsoki hosts host.run`,\n" +
			"`kitsoki hosts host.git` (host.git and host.git.*). A name nothing matches is an error with a\n" +
			"suggestion.\n\n" +
			"Exit codes: 0 listed, 1 NAME matches no handler, 2 the story does not load or one of its host\n" +
			"plugins cannot be described.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := handlerFilter("")
			if len(args) == 1 {
				f = handlerFilter(args[0])
			}
			if storyPath == "" {
				if err := f.check(nil); err != nil {
					return exitWith(exitFailure, err)
				}
				return writeHosts(cmd.OutOrStdout(), f)
			}
			// The story loads before anything is printed: a story that
			// does not load prints only its errors.
			st, err := story.Load(storyPath, g.storyOpts()...)
			if err != nil {
				return exitWith(exitLoad, err)
			}
			defer st.Close()
			if err := f.check(slices.Collect(maps.Keys(st.HostPlugins))); err != nil {
				return exitWith(exitFailure, err)
			}
			if err := writeHosts(cmd.OutOrStdout(), f); err != nil {
				return err
			}
			ls := hostplugin.List(cmd.Context(), st, hostplugin.Options{Logger: g.logger(cmd.ErrOrStderr())})
			ls = slices.DeleteFunc(ls, func(l hostplugin.Listing) bool { return !f.match(l.Decl.Name) })
			if err := writeHostPlugins(cmd.OutOrStdout(), storyPath, st, ls); err != nil {
				return err
			}
			var diags []story.Diagnostic
			for _, l := range ls {
				if l.Err != nil {
					diags = append(diags, *l.Err)
				}
			}
			if len(diags) > 0 {
				var err error = &story.LoadError{Diagnostics: diags}
				if len(diags) > 1 {
					err = fmt.Errorf("%w\n%d errors", err, len(diags))
				}
				return exitWith(exitLoad, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&storyPath, "story", "", "also list the host_plugins: of this story, with the ops each one's host.describe gives")
	addWorkspaceFlag(cmd, g)
	return cmd
}

// handlerFilter is kitsoki hosts' NAME: a handler's name, or a dotted
// prefix of names ("" matches every handler).
type handlerFilter string

// match reports whether the handler name is the filter or under it.
func (f handlerFilter) match(name string) bool {
	return f == "" || name == string(f) || strings.HasPrefix(name, string(f)+".")
}

// check fails when the filter matches no handler kitsoki knows (built or
// not) nor any of the story's host plugins, suggesting the nearest name.
func (f handlerFilter) check(plugins []string) error {
	if f == "" {
		return nil
	}
	names := slices.Clone(plugins)
	for _, s := range catalog.Builtins() {
		names = append(names, s.Name)
	}
	for _, u := range catalog.Unbuilts() {
		if strings.HasPrefix(string(f), u.Name+".") {
			return nil
		}
		names = append(names, u.Name)
	}
	if slices.ContainsFunc(names, f.match) {
		return nil
	}
	msg := fmt.Sprintf("kitsoki hosts: no handler is named %s or %s.*", f, f)
	if s := nearmiss.Closest(string(f), names, 3); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return errors.New(msg + "; kitsoki hosts lists them all")
}

// writeHosts prints the handler table of internal/load/catalog, the
// handlers f matches only.
func writeHosts(w io.Writer, f handlerFilter) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	n := 0
	for _, s := range catalog.Builtins() {
		if !f.match(s.Name) {
			continue
		}
		if n > 0 {
			fmt.Fprintln(tw)
		}
		n++
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Summary)
		writeFields(tw, "with", s.Fields)
		writeFields(tw, "returns", s.Results)
	}
	var unbuilt []catalog.Unbuilt
	for _, u := range catalog.Unbuilts() {
		if f.match(u.Name) || strings.HasPrefix(string(f), u.Name+".") { // listed as NAME, NAME.*
			unbuilt = append(unbuilt, u)
		}
	}
	if len(unbuilt) == 0 {
		return tw.Flush()
	}
	if n > 0 {
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "not built (refused at load unless a host plugin serves them):")
	for _, u := range unbuilt {
		fmt.Fprintf(tw, "  %s, %s.*\tneeds %s\n", u.Name, u.Name, u.Needs)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "agent plugin types (agent_plugins: plugin:; a .kitsoki.yaml profile's backend:; docs/agents):")
	for _, t := range agent.PluginTypes {
		fmt.Fprintf(tw, "  %s\t%s\n", t, agent.PluginSummary(t))
	}
	return tw.Flush()
}

// writeHostPlugins prints the host plugins of the story at path: each
// one's declaration, then its described ops (or why there are none).
func writeHostPlugins(w io.Writer, path string, st *story.Story, ls []hostplugin.Listing) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw)
	if len(ls) == 0 {
		fmt.Fprintf(tw, "host plugins of %s: none (the story declares no host_plugins:)\n", path)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "host plugins of %s:\n", path)
	for _, l := range ls {
		d := l.Decl
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "%s, %s.*  %s %s (%s)\n", d.Name, d.Name, d.Plugin,
			strings.Join(append([]string{displayCommand(st.Dir, d.Command)}, d.Args...), " "), d.Pos)
		switch {
		case l.Err != nil:
			fmt.Fprintf(tw, "  %s\n", l.Err.Message)
		case !l.Described:
			fmt.Fprintln(tw, "  ops: not listed (the plugin does not answer host.describe; its calls are not checked)")
		case len(l.Ops) == 0:
			fmt.Fprintln(tw, "  ops: none (host.describe lists no ops)")
		default:
			for _, op := range l.Ops {
				if op.Description == "" {
					fmt.Fprintf(tw, "  %s.%s\n", d.Name, op.Name)
				} else {
					fmt.Fprintf(tw, "  %s.%s  %s\n", d.Name, op.Name, op.Description)
				}
				writeFieldsIndented(tw, "  ", "with", argsFields(op))
			}
		}
	}
	return tw.Flush()
}

// displayCommand shows a plugin command inside the story directory
// relative to it, as the story wrote it.
func displayCommand(dir, command string) string {
	if rel, err := filepath.Rel(dir, command); err == nil && filepath.IsAbs(command) && !strings.HasPrefix(rel, "..") {
		return "./" + filepath.ToSlash(rel)
	}
	return command
}

// argsFields reads the with: fields of an op from its args_schema: the
// top-level properties with their type, enum and description, required
// ones marked. A schema without properties gives none.
func argsFields(op plugin.HostOpInfo) []catalog.Field {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Enum        []any  `json:"enum"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(op.ArgsSchema) == 0 || json.Unmarshal(op.ArgsSchema, &s) != nil {
		return nil
	}
	fs := make([]catalog.Field, 0, len(s.Properties))
	for name, p := range s.Properties {
		f := catalog.Field{Name: name, Required: slices.Contains(s.Required, name), Doc: p.Description}
		switch t := p.Type.(type) {
		case string:
			f.Type = t
		case []any:
			parts := make([]string, len(t))
			for i, x := range t {
				parts[i] = fmt.Sprint(x)
			}
			f.Type = strings.Join(parts, "|")
		}
		if len(p.Enum) > 0 {
			vals := make([]string, len(p.Enum))
			for i, v := range p.Enum {
				b, _ := json.Marshal(v)
				vals[i] = string(b)
			}
			enum := "one of " + strings.Join(vals, ", ")
			f.Doc = strings.Join(slices.DeleteFunc([]string{enum, f.Doc}, func(s string) bool { return s == "" }), "; ")
		}
		fs = append(fs, f)
	}
	slices.SortFunc(fs, func(a, b catalog.Field) int { return strings.Compare(a.Name, b.Name) })
	return fs
}

func writeFields(w io.Writer, label string, fs []catalog.Field) {
	writeFieldsIndented(w, "", label, fs)
}

// writeFieldsIndented writes a field list under label, every line
// prefixed with indent.
func writeFieldsIndented(w io.Writer, indent, label string, fs []catalog.Field) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "%s  %s:\n", indent, label)
	for _, f := range fs {
		var notes []string
		if f.Required {
			notes = append(notes, "required")
		}
		if f.Doc != "" {
			notes = append(notes, f.Doc)
		}
		if len(notes) == 0 {
			fmt.Fprintf(w, "%s    %s\t%s\n", indent, f.Name, f.Type)
			continue
		}
		fmt.Fprintf(w, "%s    %s\t%s\t%s\n", indent, f.Name, f.Type, strings.Join(notes, "; "))
	}
}
