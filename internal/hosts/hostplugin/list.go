package hostplugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/plugin"
)

// Listing is one host plugin of a story as `kitsoki hosts --story` shows
// it: its declaration and what its host.describe answer lists.
type Listing struct {
	Decl *story.HostPlugin
	// Described is false when the plugin answers host.describe with method
	// not found (-32601): it serves ops, but does not say which.
	Described bool
	// Ops are the described ops, sorted by name.
	Ops []plugin.HostOpInfo
	// Err is a diagnostic at the declaration when the plugin could not be
	// described (it does not start, crashes, answers garbage or exceeds
	// DescribeTimeout); Ops is then empty.
	Err *story.Diagnostic
}

// List asks every host plugin of st for its ops (host.describe), in the
// order of st.HostPluginNames. Each plugin is started once and stopped
// before List returns.
func List(ctx context.Context, st *story.Story, opts Options) []Listing {
	out := make([]Listing, 0, len(st.HostPlugins))
	for _, name := range st.HostPluginNames() {
		decl := st.HostPlugins[name]
		l := Listing{Decl: decl}
		ops, described, err := describe(ctx, decl, st.App.ID, opts)
		switch {
		case err != nil:
			l.Err = &story.Diagnostic{Pos: decl.Pos, Path: "host_plugins." + name,
				Message: fmt.Sprintf("host.describe failed: %v", err)}
		case described:
			l.Described = true
			l.Ops = make([]plugin.HostOpInfo, 0, len(ops))
			for _, d := range ops {
				l.Ops = append(l.Ops, d.info)
			}
			slices.SortFunc(l.Ops, func(a, b plugin.HostOpInfo) int { return cmp.Compare(a.Name, b.Name) })
		}
		out = append(out, l)
	}
	return out
}
