// Package expr compiles and evaluates the three small languages a story is
// written in (story-format.md §10–§11):
//
//   - guards (when:) — expr-lang expressions restricted to a whitelist of
//     roots and functions, which must yield a bool;
//   - value templates ({{ expr }} in set, with, bind, emit_intent and emit
//     slots) — the same expression language spliced into strings, keeping
//     the typed result when the whole string is one {{ … }};
//   - text templates (view, say, prompt files) — pongo2 (Django syntax) with
//     autoescape off, a ?? shorthand and a few column-oriented filters.
//
// Everything is compiled once, when the story loads; evaluation only reads
// the compiled form, so compiled values are safe for concurrent use.
// docs/expressions.md is the author-facing description.
package expr

// Env is an evaluation scope. Keys are the roots story-format.md §10 allows:
// world, slots, args, event, run, result, menu, item (text templates also
// see state). A root that is absent from the map evaluates to nil. Env is
// only read, never modified.
type Env map[string]any
