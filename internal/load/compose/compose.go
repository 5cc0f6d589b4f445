// Package compose folds an imported story into the story importing it
// (imports:, see docs/stories.md). The loader (internal/load/story) reads
// the imported story's files and its own imports; compose renames them
// under the import's alias, on the parsed trees, in place: each import owns
// its parse (the loader parses a file again only for a second import of
// it), so a fold copies nothing but the little the importer writes into
// the imported story (exit sets, bindings, overrides).
//
// Two kinds of renaming are done, each where its language is parsed:
//
//   - structure, on the YAML tree (Import.Fold): state names and the
//     targets naming them, world keys where the format names one (world:,
//     the keys of set:, increment:, bind:, unset:, append:,
//     relevant_world:, pending_plan_path:), intent names (on: keys,
//     intents:, default_intent, literal emit_intent, view intent:),
//     host_interfaces names and iface.<name>.<op> invokes, @exit:<name>
//     targets, prompt files swapped by overrides.prompts;
//   - references inside templates and expressions (world.k, a menu
//     helper's intent name), when the loader compiles them: a Chain is the
//     expr.Names the imported text is compiled with, so expr-lang's AST and
//     pongo2's tokens are renamed and string literals, prose and comments
//     are not.
package compose

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// InterfaceNamespace is the prefix of an invoke of a host interface
// operation: iface.<name>.<op>.
const InterfaceNamespace = "iface."

// Import is one imports: entry being folded: the alias, the names the
// imported story declares (in its own names, its own imports folded in),
// and what the importer asks of it.
type Import struct {
	Alias string

	States  map[string]bool // top-level state names
	World   map[string]bool // world keys
	Intents map[string]bool // intents, top-level and state-level
	Ifaces  map[string]bool // host_interfaces names
	Exits   map[string]bool // the exits it declares
	// Requires lists, by exit, the world keys (its own names) every
	// transition into the exit sets (exits.<name>.requires); NonZero are
	// its world keys whose default is not their type's zero value, which
	// need no set.
	Requires map[string][]string
	NonZero  map[string]bool

	Bare    map[string]bool   // intents.export: the importer's intents, never renamed
	Lifted  map[string]bool   // intents.import: renamed, and also kept under the bare name
	ExitTo  map[string]Exit   // imports.<alias>.exits, by exit name
	Prompts map[string]string // overrides.prompts: prompt file → the importer's

	// Report is told of a problem in the imported story at node n.
	Report func(n *yaml.Node, msg string)
	// ExitTarget is told of each target node written from the to: of
	// exit, which is checked where the to: is written.
	ExitTarget func(n *yaml.Node, exit string)
	// Appended is told of each exit set: appended to an arm of the
	// imported story: it is written in the importer's names, and so is
	// compiled with the importer's Chain, not the imported story's.
	Appended func(set *yaml.Node)
}

// Exit is an imports.<alias>.exits entry: the importer's target and the
// set: appended to every transition into the exit.
type Exit struct {
	To  string
	Set *yaml.Node // a mapping, nil when absent
}

// Key is the importer's name of one of the imported story's world keys or
// host interfaces.
func (im *Import) Key(k string) string { return im.Alias + "__" + k }

// WorldKey renames a world key of the imported story.
func (im *Import) WorldKey(k string) (string, bool) {
	if im.World[k] {
		return im.Key(k), true
	}
	return k, false
}

// Intent renames an intent of the imported story, unless the importer
// exports it down (intents.export).
func (im *Import) Intent(name string) (string, bool) {
	if im.Intents[name] && !im.Bare[name] {
		return im.Key(name), true
	}
	return name, false
}

// IntentName is Intent's name alone.
func (im *Import) IntentName(name string) string {
	to, _ := im.Intent(name)
	return to
}

// State renames a state path of the imported story (a path whose first
// segment is one of its top-level states); other paths are kept.
func (im *Import) State(path string) (string, bool) {
	norm := NormState(path)
	if im.States[FirstSeg(norm)] {
		return im.Alias + "." + norm, true
	}
	return path, false
}

// Chain is the renaming a piece of an imported story's text is compiled
// with: the imports it was folded through, innermost first. It is an
// expr.Names. The zero Chain renames nothing.
type Chain struct {
	imps []*Import
}

// Add appends the next enclosing import.
func (c *Chain) Add(im *Import) { c.imps = append(c.imps, im) }

// Empty reports whether the chain renames nothing.
func (c *Chain) Empty() bool { return c == nil || len(c.imps) == 0 }

// WorldKey renames a world key through each import, innermost first.
func (c *Chain) WorldKey(k string) (string, bool) {
	renamed := false
	for _, im := range c.imps {
		if to, ok := im.WorldKey(k); ok {
			k, renamed = to, true
		}
	}
	return k, renamed
}

// OwnWorld is the world keys the innermost imported story declares, in its
// own names, sorted: the keys its text may read, for a did-you-mean.
func (c *Chain) OwnWorld() []string {
	if c.Empty() {
		return nil
	}
	keys := make([]string, 0, len(c.imps[0].World))
	for k := range c.imps[0].World {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Intent renames an intent name through each import, innermost first.
func (c *Chain) Intent(name string) (string, bool) {
	renamed := false
	for _, im := range c.imps {
		if to, ok := im.Intent(name); ok {
			name, renamed = to, true
		}
	}
	return name, renamed
}

// NormState normalises a state path: slashes are dots, no dot at either
// end.
func NormState(s string) string {
	s = strings.ReplaceAll(s, "/", ".")
	return strings.Trim(s, ".")
}

// FirstSeg is the first segment of a dotted path.
func FirstSeg(p string) string {
	if i := strings.IndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return p
}

func templated(s string) bool { return strings.Contains(s, "{{") }
