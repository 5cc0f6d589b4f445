// Package intenttest runs an intents dataset: utterances with the intent
// and slots they should route to, per state, through a session's routing
// tiers and router agent, and reports the accuracy per intent with Wilson
// 95% intervals (kitsoki test intents).
package intenttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"

	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// None is the expected intent of an utterance that should route nowhere.
const None = orchestrator.RouteNone

// Case is one utterance of a dataset.
type Case struct {
	State  string
	Say    string
	Intent string         // the expected intent, or "none"
	Slots  map[string]any // the expected slots (others may be filled too)
	Line   int
}

// Dataset is a loaded intents dataset.
type Dataset struct {
	Path  string
	Cases []Case
}

// Error is a dataset error at a position.
type Error struct {
	File      string
	Line, Col int
	Path      string // key path, e.g. cases[2].state
	Msg       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Col, e.Path, e.Msg)
}

// Errors are all the errors of a dataset, in file order.
type Errors []*Error

func (es Errors) Error() string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return strings.Join(out, "\n")
}

var caseKeys = []string{"state", "say", "intent", "slots"}

// Load reads a dataset ("cases: [{state, say, intent, slots}]") and checks
// it against the story: every state declared, every intent declared (or
// "none"), every slot one of its intent's.
func Load(path string, st *story.Story) (*Dataset, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("dataset %s: YAML syntax error: %w", path, err)
	}
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: path, Line: max(root.Line, 1), Col: max(root.Column, 1), Path: "cases", Msg: "a dataset is a mapping with cases: [{state, say, intent, slots}]"}
	}
	r := &datasetReader{path: path, st: st}
	cases := r.casesList(root)
	if cases == nil {
		return nil, r.errs
	}
	r.states = slices.Sorted(maps.Keys(st.States))
	ds := &Dataset{Path: path}
	for i, cn := range cases.Content {
		if c, ok := r.readCase(cn, fmt.Sprintf("cases[%d]", i)); ok {
			ds.Cases = append(ds.Cases, c)
		}
	}
	if len(r.errs) > 0 {
		slices.SortStableFunc(r.errs, func(a, b *Error) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, r.errs
	}
	return ds, nil
}

// datasetReader collects every error of one dataset file, so that the
// author sees them all at once, sorted by position.
type datasetReader struct {
	path   string
	st     *story.Story
	states []string // the story's state names, sorted, for suggestions
	errs   Errors
}

// bad records an error at node n, key path p.
func (r *datasetReader) bad(n *yaml.Node, p, format string, args ...any) {
	r.errs = append(r.errs, &Error{File: r.path, Line: n.Line, Col: n.Column, Path: p, Msg: fmt.Sprintf(format, args...)})
}

// casesList returns the dataset's cases: list, the one key of its top
// mapping, or nil (with the error recorded) when it is missing, not a list
// or empty.
func (r *datasetReader) casesList(root *yaml.Node) *yaml.Node {
	var cases *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "cases" {
			r.bad(k, k.Value, "unknown key %q; a dataset has only cases:", k.Value)
			continue
		}
		cases = v
	}
	if cases == nil || cases.Kind != yaml.SequenceNode || len(cases.Content) == 0 {
		n := root
		if cases != nil {
			n = cases
		}
		r.bad(n, "cases", "cases: must be a non-empty list of {state, say, intent, slots}")
		return nil
	}
	return cases
}

// readCase reads one case at key path p: its keys, its three required
// strings, then its state, intent and slots checked against the story. A
// case that is not a mapping is left out (ok false); any other case is
// kept, its errors recorded.
func (r *datasetReader) readCase(cn *yaml.Node, p string) (Case, bool) {
	if cn.Kind != yaml.MappingNode {
		r.bad(cn, p, "a case is a mapping {state, say, intent, slots}")
		return Case{}, false
	}
	c := Case{Line: cn.Line}
	nodes := map[string]*yaml.Node{}
	for j := 0; j+1 < len(cn.Content); j += 2 {
		k, v := cn.Content[j], cn.Content[j+1]
		if !slices.Contains(caseKeys, k.Value) {
			r.bad(k, p+"."+k.Value, "unknown key %q (a case has %s)", k.Value, strings.Join(caseKeys, ", "))
			continue
		}
		nodes[k.Value] = v
	}
	for _, key := range []string{"state", "say", "intent"} {
		v, ok := nodes[key]
		if !ok {
			r.bad(cn, p, "%s: is required", key)
			continue
		}
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			r.bad(v, p+"."+key, "%s must be a non-empty string", key)
			continue
		}
		switch key {
		case "state":
			c.State = v.Value
		case "say":
			c.Say = v.Value
		case "intent":
			c.Intent = v.Value
		}
	}
	r.checkAgainstStory(&c, nodes, p)
	return c, true
}

// checkAgainstStory checks a case's state and intent against the story's
// declarations, and reads its slots, each of which must be a slot of the
// intent (an intent of none takes no slots).
func (r *datasetReader) checkAgainstStory(c *Case, nodes map[string]*yaml.Node, p string) {
	var def *story.Intent
	if c.State != "" && r.st.States[c.State] == nil {
		r.bad(nodes["state"], p+".state", "state %q is not declared in the story%s", c.State, didYouMean(c.State, r.states))
	}
	if c.Intent != "" && c.Intent != None {
		def = intentDef(r.st, c.State, c.Intent)
		if def == nil {
			r.bad(nodes["intent"], p+".intent", "intent %q is not declared in the story; name a declared intent, or none for an utterance that should route nowhere", c.Intent)
		}
	}
	sn, ok := nodes["slots"]
	if !ok {
		return
	}
	var slots map[string]any
	if err := sn.Decode(&slots); err != nil || sn.Kind != yaml.MappingNode {
		r.bad(sn, p+".slots", "slots must be a mapping of slot names to values")
		return
	}
	c.Slots = slots
	for j := 0; j+1 < len(sn.Content); j += 2 {
		k := sn.Content[j]
		if c.Intent == None {
			r.bad(k, p+".slots."+k.Value, "an utterance expected to route nowhere (intent: none) has no slots")
		} else if def != nil && def.Slots[k.Value] == nil {
			r.bad(k, p+".slots."+k.Value, "slot %q is not a slot of intent %q%s", k.Value, c.Intent, didYouMean(k.Value, slices.Sorted(maps.Keys(def.Slots))))
		}
	}
}

// didYouMean is ` (did you mean "x"?)` for the candidate within two edits
// of word, or "".
func didYouMean(word string, cands []string) string {
	best := nearmiss.Closest(word, cands, 2)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// intentDef is the intent as seen from state: a state-local declaration
// (the state or an ancestor) shadows the global one.
func intentDef(st *story.Story, state, name string) *story.Intent {
	for s := st.States[state]; s != nil; s = st.States[s.Parent] {
		if in := s.Intents[name]; in != nil {
			return in
		}
		if s.Parent == "" {
			break
		}
	}
	return st.Intents[name]
}

// Router is what a dataset runs through: a session's routing.
type Router interface {
	RouteIn(ctx context.Context, n int64, state, text string) (orchestrator.Route, error)
}

// Result is one case's outcome.
type Result struct {
	Case   Case
	Got    orchestrator.Route
	Passed bool
	Why    string // why it failed
}

// IntentStats is the accuracy of the cases expecting one intent.
type IntentStats struct {
	Intent   string
	N        int
	Correct  int
	Accuracy float64
	Interval eval.Interval
}

// Report is a dataset run.
type Report struct {
	Results  []Result
	Intents  []IntentStats // by intent name
	N        int
	Correct  int
	Accuracy float64
	Interval eval.Interval
}

// Run routes every case and scores it: the routed intent must be the
// expected one ("none" = nothing routed) and every expected slot must
// have the expected value (compared as text, so 3 and "3" agree). A
// router call that fails counts as a miss, with its error as the reason,
// whatever the case expected ("none" too); only a trace failure stops the
// run.
func Run(ctx context.Context, r Router, ds *Dataset) (*Report, error) {
	rep := &Report{}
	by := map[string]*IntentStats{}
	for i, c := range ds.Cases {
		got, err := r.RouteIn(ctx, int64(i+1), c.State, c.Say)
		if err != nil {
			return nil, fmt.Errorf("case %d (%s:%d): %w", i, ds.Path, c.Line, err)
		}
		res := Result{Case: c, Got: got}
		res.Passed, res.Why = score(c, got)
		rep.Results = append(rep.Results, res)
		s := by[c.Intent]
		if s == nil {
			s = &IntentStats{Intent: c.Intent}
			by[c.Intent] = s
		}
		s.N++
		rep.N++
		if res.Passed {
			s.Correct++
			rep.Correct++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(by)) {
		s := by[name]
		s.Accuracy = float64(s.Correct) / float64(s.N)
		s.Interval = eval.Wilson(s.Correct, s.N)
		rep.Intents = append(rep.Intents, *s)
	}
	if rep.N > 0 {
		rep.Accuracy = float64(rep.Correct) / float64(rep.N)
	}
	rep.Interval = eval.Wilson(rep.Correct, rep.N)
	return rep, nil
}

func score(c Case, got orchestrator.Route) (bool, string) {
	// A failed call routed nowhere because it could not route at all: a
	// miss, even where "none" was expected.
	if got.Err != nil {
		return false, fmt.Sprintf("the router failed: %v", got.Err)
	}
	gotIntent := got.Intent
	if gotIntent == "" {
		gotIntent = None
	}
	if gotIntent != c.Intent {
		why := fmt.Sprintf("routed to %s (%s tier), want %s", gotIntent, got.Tier, c.Intent)
		if got.Rejection != nil {
			why += ": " + got.Rejection.Message
		}
		return false, why
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(c.Slots)) {
		want := fmt.Sprint(c.Slots[k])
		v, ok := got.Slots[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("slot %s missing, want %q", k, want))
		} else if fmt.Sprint(v) != want {
			diffs = append(diffs, fmt.Sprintf("slot %s = %q, want %q", k, fmt.Sprint(v), want))
		}
	}
	if len(diffs) > 0 {
		return false, strings.Join(diffs, "; ")
	}
	return true, ""
}

// Write prints the report: each failing case, then the accuracy per
// intent and overall with the Wilson 95% interval.
func (rep *Report) Write(w io.Writer, ds *Dataset) error {
	var b strings.Builder
	for _, r := range rep.Results {
		if !r.Passed {
			fmt.Fprintf(&b, "✗ %s:%d [%s] %q: %s\n", ds.Path, r.Case.Line, r.Case.State, r.Case.Say, r.Why)
		}
	}
	width := len("overall")
	for _, s := range rep.Intents {
		width = max(width, len(s.Intent))
	}
	fmt.Fprintf(&b, "%-*s  %7s  %8s  %s\n", width, "intent", "correct", "accuracy", "95% interval")
	for _, s := range rep.Intents {
		fmt.Fprintf(&b, "%-*s  %7s  %7.1f%%  [%.1f%%, %.1f%%]\n", width, s.Intent, fmt.Sprintf("%d/%d", s.Correct, s.N),
			100*s.Accuracy, 100*s.Interval.Low, 100*s.Interval.High)
	}
	fmt.Fprintf(&b, "%-*s  %7s  %7.1f%%  [%.1f%%, %.1f%%]\n", width, "overall", fmt.Sprintf("%d/%d", rep.Correct, rep.N),
		100*rep.Accuracy, 100*rep.Interval.Low, 100*rep.Interval.High)
	_, err := io.WriteString(w, b.String())
	return err
}

// IsDatasetError reports whether err is a dataset's own error (as opposed
// to one reading it).
func IsDatasetError(err error) bool {
	var es Errors
	var e *Error
	return errors.As(err, &es) || errors.As(err, &e)
}
