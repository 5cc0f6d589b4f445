package intenttest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// FixtureFile is one document of a Kitsoki intents fixture file
// (intents/*.yaml, test_kind: intents): the state its inputs are typed in,
// defaults, and the fixtures.
type FixtureFile struct {
	Path     string
	Doc      int // document index in the file (0-based)
	App      string
	State    string
	Defaults Defaults
	Fixtures []*Fixture
}

// Defaults are a file's defaults: how many times each input is routed, the
// pass rate a fixture needs, and the router's sampling temperature.
type Defaults struct {
	Runs           int
	MinPassRate    float64
	Temperature    float64
	HasTemperature bool
}

// Fixture is one fixture: inputs, and what routing each should give.
type Fixture struct {
	ID   string
	Line int
	// Intent and Slots: each input routes to Intent with (at least) these
	// slots. Slots merges intent.slots and the fixture's slots:.
	Intent string
	Slots  map[string]any
	Inputs []string
	// Runs and MinPassRate override the file's defaults (0: not set).
	Runs        int
	MinPassRate float64
	// ExpectFailure lists the rejection codes any of which an input may
	// get (clarify: asked for more); ExpectFallthrough says the input
	// routes to an intent the state takes through its "*" arm.
	ExpectFailure     []string
	ExpectFallthrough bool
}

// DefaultMinPassRate and DefaultRuns apply when neither the fixture nor its
// file's defaults say.
const (
	DefaultMinPassRate = 0.90
	DefaultRuns        = 1
)

var (
	fileKeys     = []string{"test_kind", "app", "state", "defaults", "fixtures"}
	defaultsKeys = []string{"runs", "min_pass_rate", "temperature"}
	fixtureKeys  = []string{"id", "intent", "slots", "inputs", "runs", "min_pass_rate", "expect_failure", "expect_fallthrough"}
)

// LoadFixtures reads an intents fixture file, each document of which is
// checked against the story: its state declared, its intents and slots
// declared. Documents of another test_kind are skipped, as Kitsoki does.
func LoadFixtures(path string, st *story.Story) ([]*FixtureFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("intents fixture: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []*FixtureFile
	var errs Errors
	for i := 0; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("intents fixture %s: YAML syntax error: %w", path, err)
		}
		if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
			return nil, fmt.Errorf("intents fixture %s: %w", path, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		p := &fixtureParser{file: path, st: st}
		ff := p.file0(doc.Content[0], i)
		errs = append(errs, p.errs...)
		if ff != nil {
			out = append(out, ff)
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *Error) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, errs
	}
	return out, nil
}

type fixtureParser struct {
	file string
	st   *story.Story
	errs Errors
}

func (p *fixtureParser) bad(n *yaml.Node, path, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: n.Line, Col: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// fields indexes a mapping's keys, refusing unknown ones with a
// suggestion.
func (p *fixtureParser) fields(n *yaml.Node, path string, known []string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		p.bad(n, path, "expected a mapping with keys %s, got %s", strings.Join(known, ", "), kindOf(n))
		return nil
	}
	m := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(known, k.Value) {
			p.bad(k, joinKey(path, k.Value), "unknown key %q%s (known: %s)", k.Value, didYouMean(k.Value, known), strings.Join(known, ", "))
			continue
		}
		m[k.Value] = n.Content[i+1]
	}
	return m
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the scalar %q", n.Value)
	}
	return "nothing"
}

func (p *fixtureParser) file0(n *yaml.Node, doc int) *FixtureFile {
	if n.Kind != yaml.MappingNode || testKind(n) != "intents" {
		return nil // another kind of document, skipped as Kitsoki skips it
	}
	m := p.fields(n, "", fileKeys)
	ff := &FixtureFile{Path: p.file, Doc: doc}
	ff.App = p.str(m, "app", "")
	if ff.App != "" && ff.App != p.st.App.ID && !strings.ContainsAny(ff.App, `/\`) {
		p.bad(m["app"], "app", "app %q is not the story under test (its app.id is %q)", ff.App, p.st.App.ID)
	}
	ff.State = p.str(m, "state", "")
	if ff.State == "" {
		p.bad(n, "state", "state: is required: the state whose intents the inputs are routed among")
	} else if p.st.States[ff.State] == nil {
		p.bad(m["state"], "state", "state %q is not declared in the story%s", ff.State, didYouMean(ff.State, slices.Sorted(maps.Keys(p.st.States))))
	}
	if dn := m["defaults"]; dn != nil {
		p.defaults(dn, &ff.Defaults)
	}
	fn := m["fixtures"]
	if fn == nil || fn.Kind != yaml.SequenceNode {
		at := n
		if fn != nil {
			at = fn
		}
		p.bad(at, "fixtures", "fixtures: must be a list of {id, inputs, intent | expect_failure | expect_fallthrough}")
		return ff
	}
	for i, fx := range fn.Content {
		if f := p.fixture(fx, fmt.Sprintf("fixtures[%d]", i), ff.State); f != nil {
			ff.Fixtures = append(ff.Fixtures, f)
		}
	}
	return ff
}

// testKind is a mapping's test_kind: value.
func testKind(n *yaml.Node) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "test_kind" {
			return n.Content[i+1].Value
		}
	}
	return ""
}

func (p *fixtureParser) defaults(n *yaml.Node, d *Defaults) {
	m := p.fields(n, "defaults", defaultsKeys)
	if m == nil {
		return
	}
	d.Runs = p.count(m, "runs", "defaults")
	d.MinPassRate = p.rate(m, "min_pass_rate", "defaults")
	if tn := m["temperature"]; tn != nil {
		var t float64
		if tn.Kind != yaml.ScalarNode || tn.Decode(&t) != nil || t < 0 || t > 2 {
			p.bad(tn, "defaults.temperature", "temperature must be a number from 0 to 2 (the router's sampling temperature), got %s", kindOf(tn))
			return
		}
		d.Temperature, d.HasTemperature = t, true
	}
}

func (p *fixtureParser) fixture(n *yaml.Node, path, state string) *Fixture {
	m := p.fields(n, path, fixtureKeys)
	if m == nil {
		return nil
	}
	f := &Fixture{Line: n.Line, ID: p.str(m, "id", path)}
	if f.ID == "" {
		f.ID = path
	}
	f.Runs = p.count(m, "runs", path)
	f.MinPassRate = p.rate(m, "min_pass_rate", path)
	if in := m["inputs"]; in == nil || in.Kind != yaml.SequenceNode || in.Decode(&f.Inputs) != nil || len(f.Inputs) == 0 {
		at := n
		if in != nil {
			at = in
		}
		p.bad(at, joinKey(path, "inputs"), "inputs: must be a non-empty list of utterances")
	}
	var def *story.Intent
	if in := m["intent"]; in != nil {
		im := p.fields(in, joinKey(path, "intent"), []string{"name", "slots"})
		f.Intent = p.str(im, "name", joinKey(path, "intent"))
		if f.Intent == "" {
			p.bad(in, joinKey(path, "intent.name"), "intent.name is required")
		} else if def = intentDef(p.st, state, f.Intent); def == nil {
			p.bad(im["name"], joinKey(path, "intent.name"), "intent %q is not declared in the story%s", f.Intent, didYouMean(f.Intent, slices.Sorted(maps.Keys(p.st.Intents))))
		}
		f.Slots = p.slots(im["slots"], joinKey(path, "intent.slots"), def, f.Intent, nil)
	}
	f.Slots = p.slots(m["slots"], joinKey(path, "slots"), def, f.Intent, f.Slots)
	if en := m["expect_failure"]; en != nil {
		em := p.fields(en, joinKey(path, "expect_failure"), []string{"any_of"})
		if an := em["any_of"]; an == nil || an.Kind != yaml.SequenceNode || an.Decode(&f.ExpectFailure) != nil || len(f.ExpectFailure) == 0 {
			p.bad(en, joinKey(path, "expect_failure.any_of"), "expect_failure.any_of must be a non-empty list of codes (e.g. [UNKNOWN_INTENT, INTENT_NOT_ALLOWED_IN_STATE, MISSING_SLOTS, clarify])")
		}
	}
	if fn := m["expect_fallthrough"]; fn != nil {
		if fn.Kind != yaml.ScalarNode || fn.Decode(&f.ExpectFallthrough) != nil {
			p.bad(fn, joinKey(path, "expect_fallthrough"), "expect_fallthrough must be true or false, got %s", kindOf(fn))
		}
	}
	if n := btoi(f.Intent != "") + btoi(f.ExpectFailure != nil) + btoi(f.ExpectFallthrough); n > 1 {
		p.bad(n0(m, n), path, "a fixture expects one of intent:, expect_failure: or expect_fallthrough: true")
	}
	return f
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// n0 is a node to report a whole-fixture error at.
func n0(m map[string]*yaml.Node, _ int) *yaml.Node {
	for _, k := range []string{"intent", "expect_failure", "expect_fallthrough", "id"} {
		if n := m[k]; n != nil {
			return n
		}
	}
	return &yaml.Node{}
}

func (p *fixtureParser) slots(n *yaml.Node, path string, def *story.Intent, intent string, into map[string]any) map[string]any {
	if n == nil || n.Tag == "!!null" {
		return into
	}
	var sm map[string]any
	if n.Kind != yaml.MappingNode || n.Decode(&sm) != nil {
		p.bad(n, path, "slots must be a mapping of slot names to values, got %s", kindOf(n))
		return into
	}
	if into == nil {
		into = map[string]any{}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if def != nil && def.Slots[k] == nil {
			p.bad(n.Content[i], joinKey(path, k), "slot %q is not a slot of intent %q%s", k, intent, didYouMean(k, slices.Sorted(maps.Keys(def.Slots))))
		}
		if old, dup := into[k]; dup && fmt.Sprint(old) != fmt.Sprint(sm[k]) {
			p.bad(n.Content[i], joinKey(path, k), "slot %q is %v in intent.slots and %v here; write it once", k, old, sm[k])
		}
		into[k] = sm[k]
	}
	return into
}

func (p *fixtureParser) str(m map[string]*yaml.Node, key, path string) string {
	n := m[key]
	if n == nil || n.Tag == "!!null" {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		p.bad(n, joinKey(path, key), "%s must be a string, got %s", key, kindOf(n))
		return ""
	}
	return n.Value
}

func (p *fixtureParser) count(m map[string]*yaml.Node, key, path string) int {
	n := m[key]
	if n == nil {
		return 0
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || v < 1 {
		p.bad(n, joinKey(path, key), "%s must be a whole number of at least 1, got %s", key, kindOf(n))
		return 0
	}
	return v
}

func (p *fixtureParser) rate(m map[string]*yaml.Node, key, path string) float64 {
	n := m[key]
	if n == nil {
		return 0
	}
	var v float64
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || v <= 0 || v > 1 {
		p.bad(n, joinKey(path, key), "%s must be a number above 0 and at most 1, got %s", key, kindOf(n))
		return 0
	}
	return v
}

// FixtureFiles lists the story's intents fixtures: glob, else
// <story dir>/intents/*.yaml (appPath may be the story directory).
func FixtureFiles(appPath, glob string) ([]string, error) {
	appPath = story.RootFile(appPath)
	if glob == "" {
		glob = filepath.Join(filepath.Dir(appPath), "intents", "*.yaml")
	}
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, fmt.Errorf("--intents %q: %w", glob, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no intents fixtures match %s (write intents/*.yaml with test_kind: intents, or pass --dataset FILE)", glob)
	}
	return files, nil
}
