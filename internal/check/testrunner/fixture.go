package testrunner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// Fixture is one flow fixture (cassettes-and-flows.md §5): a file may hold
// several, separated by ---.
type Fixture struct {
	File  string // the file it came from
	Index int    // its document index in the file (0-based)
	Name  string // report name: the file's base name, plus #N when the file holds several

	TestKind     string
	App          string // as written, relative to the fixture file
	AppPath      string // resolved; the command's story when app: is absent
	InitialState string
	InitialWorld map[string]any
	HostHandlers map[string]*Stub
	// HostBindings are the host_bindings entries, in file order: handlers
	// that answer for real in this flow, and interfaces routed to them.
	HostBindings []Binding
	HostCassette string // as written, relative to the fixture's directory
	CassettePath string // resolved
	Turns        []*TurnSpec

	ExpectTerminal    bool
	ExpectNoErrors    bool
	ExpectWorldFinal  map[string]any
	ExpectNoHostCalls bool
	// NoHostCallsOf is expect_no_host_calls written as a list: none of
	// these handlers (exactly or under them) is called in the whole flow.
	NoHostCallsOf          []string
	StrictCassetteCoverage bool
	// ExpectEventsAtLeast / AtMost bound the number of trace events the
	// flow's turns write (the turn-0 seed not counted); nil = no bound.
	ExpectEventsAtLeast *int
	ExpectEventsAtMost  *int
	// AdvanceClock is set when a turn has advance_clock:; like
	// host_handlers/host_cassette it turns host dispatch on.
	AdvanceClock bool
	// AppID is app: written as a story id rather than a path: the story
	// under test (the command's) must have that id.
	AppID string

	// NoDispatch is use_orchestrator: false: Kitsoki's machine-only
	// runner, where no host call is dispatched (each is answered with
	// nothing), whatever host_handlers or a cassette say.
	NoDispatch bool

	// Mode is the execution mode the flow runs in (mode:, "" = one_shot).
	Mode string
	// ExpectFiles are the expect_files: entries, checked when the flow
	// ends.
	ExpectFiles []FileExpect

	// RecordingPath is the recording that answers the input: turns
	// (recording:, else <app dir>/recording.yaml when it exists; "" for
	// none: the session's own routing answers them).
	RecordingPath string
	// SkipReason is why the fixture is skipped ("" when it runs).
	SkipReason string

	// appAt and cassetteAt are where app: and host_cassette: are written,
	// for the workspace check's messages; defaultApp is the command's
	// story, whose workspace holds what the fixture names.
	appAt, cassetteAt yamlAt
	defaultApp        string

	// HTTPCassette is starlark_http_cassette: as written; HTTPCassettePath
	// resolved. It serves host.starlark.run's HTTP, replay only.
	HTTPCassette, HTTPCassettePath string
	httpCassetteAt                 yamlAt

	// InspectCassette is starlark_inspect_cassette: as written;
	// InspectCassettePath resolved. It answers host.starlark.run's
	// ctx.probe calls.
	InspectCassette, InspectCassettePath string
	inspectCassetteAt                    yamlAt
}

// Stub is a host_handlers entry: a canned answer, optionally per call id
// or per op.
type Stub struct {
	Envelope
	Line, Col int // position of the stub's key in the fixture file
	Delay     time.Duration
	// Clarification is request_clarification: the question the stub asks
	// (as a background job) before it answers; "" for none.
	Clarification string
	ByCall        map[string]Envelope
	ByOp          map[string]Envelope
}

// Envelope is a stub answer: data and/or a domain error, or an
// infrastructure failure.
type Envelope struct {
	Data       map[string]any
	HasData    bool
	Error      string
	InfraError string
	// Delay, in a by_call or by_op entry, is how long that answer takes on
	// the flow's clock (HasDelay: written; else the stub's own delay).
	Delay    time.Duration
	HasDelay bool
}

// TurnSpec is one turn of a fixture: the intent to submit and what to
// assert afterwards.
type TurnSpec struct {
	Line   int
	Intent string
	Slots  map[string]any
	Input  string // a free-text turn: the recording, else the session's routing, picks the intent
	// DisplayInput (display_input:, as Kitsoki's trace to-flow writes it)
	// is the user's words an intent turn records in turn.input and
	// turn.start in place of none.
	DisplayInput string
	// ExpectTerminal (turn level) checks the session is (true) or is not
	// (false) in a terminal state after the turn; nil: not checked.
	ExpectTerminal *bool
	// ExpectEventsExact are the turn's events of the kinds it names,
	// exactly, in order.
	ExpectEventsExact []EventExpect

	ExpectState       string
	HasExpectState    bool
	ExpectNotState    string
	ExpectStateIn     []string
	ExpectWorld       map[string]any
	ExpectWorldFull   map[string]any
	HasWorldFull      bool
	ExpectSlots       map[string]any
	ExpectError       *ExpectError
	ExpectViewMatches *regexp.Regexp
	ExpectNoView      bool
	ExpectHostCalls   []HostCallExpect
	ExpectNoHostCalls bool
	NoHostCallsOf     []string // expect_no_host_calls as a list of handlers
	ExpectEvents      []EventExpect

	// ExpectWorldFinal (turn level) is checked against the world when the
	// flow ends, as the fixture-level key is; failures name the turn.
	ExpectWorldFinal     map[string]any
	ExpectWorldUnchanged bool // the turn leaves the world as it found it
	// AdvanceClock moves the flow's fake clock forward after the turn;
	// the timeouts then due fire before the turn's expectations are
	// checked. A turn with advance_clock: and no intent only moves the
	// clock.
	AdvanceClock time.Duration
	// WorldOverride (world_override:) is set into the world at the start
	// of the turn, before its guards run.
	WorldOverride map[string]any
	// Then holds further expectation blocks checked after the turn, each
	// like a turn's expect_* keys.
	Then []*TurnSpec

	// ExpectInbox and ExpectJobs check the session's inbox and background
	// jobs once the turn's jobs have settled.
	ExpectInbox *InboxExpect
	ExpectJobs  *JobsExpect
}

// InboxExpect is expect_inbox: counts of the unread notifications and
// their severities (sorted); nil fields are not checked.
type InboxExpect struct {
	Unread         *int
	NeedsAttention *int
	Severities     []string
	HasSeverities  bool
}

// JobsExpect is expect_jobs: how many of the session's background jobs
// there are (total) and how many are in each status; nil fields are not
// checked.
type JobsExpect struct {
	Total  *int
	Counts map[string]*int // running, awaiting_input, done, failed, cancelled
	// List is expect_jobs written as a list (Kitsoki's form): each entry
	// takes the next job that became terminal (done, failed, cancelled or
	// awaiting_input) during the turn, in start order, whose handler is its
	// namespace, and its status must be the entry's.
	List []JobExpect
}

// JobExpect is one entry of expect_jobs as a list.
type JobExpect struct {
	Namespace, Status string
	Line              int
}

// EventExpect is one expect_events entry: a trace event of Kind (with
// StatePath when HasStatePath) whose payload includes Payload (maps
// compared by their listed keys, recursively; other values by JSON
// encoding). The entries of a turn are found in order among its events.
type EventExpect struct {
	Line         int
	Kind         string
	StatePath    string
	HasStatePath bool
	Payload      map[string]any // nil: any payload
}

// ExpectError expects the turn to be rejected with Code; AllowedContains
// lists intents the rejection's allowed_intents must include.
type ExpectError struct {
	Code            string
	AllowedContains []string
	// GuardHint is the rejection's guard hint, exactly; MissingSlots are
	// slots its missing_slots must include.
	GuardHint    string
	MissingSlots []string
}

// HostCallExpect expects calls to Handler (exactly or under it as a dotted
// prefix) whose args include Args; Times is exact when set, else at least
// once.
type HostCallExpect struct {
	Handler string
	ID      string // the invoke's id: (the call's args.call); "" = any
	Args    map[string]any
	Times   int
	HasTime bool
}

var (
	fixtureKeys = []string{"test_kind", "description", "app", "initial_state", "initial_world", "host_handlers", "host_cassette", "turns",
		"expect_terminal", "expect_no_errors", "expect_world_final", "expect_no_host_calls", "strict_cassette_coverage",
		"expect_events_count_atleast", "expect_events_count_atmost", "starlark_http_cassette",
		"host_bindings", "advance_clock", "mode", "use_orchestrator", "expect_files", "starlark_inspect_cassette", "recording"}
	turnKeys = []string{"intent", "expect_state", "expect_not_state", "expect_state_in", "expect_world", "expect_world_full",
		"expect_slots", "expect_error", "expect_view_matches", "expect_no_view", "expect_host_calls", "expect_no_host_calls",
		"expect_events", "expect_events_exact", "expect_world_final", "expect_world_unchanged", "advance_clock", "then",
		"world_override", "expect_inbox", "expect_jobs", "input", "display_input", "expect_terminal"}
	// thenKeys are what a then: block may hold: a turn's expectations.
	thenKeys = []string{"expect_state", "expect_not_state", "expect_state_in", "expect_world", "expect_world_full",
		"expect_slots", "expect_error", "expect_view_matches", "expect_no_view", "expect_host_calls", "expect_no_host_calls",
		"expect_events", "expect_events_exact", "expect_world_final", "expect_world_unchanged", "expect_inbox", "expect_jobs", "expect_terminal"}
	stubKeys     = []string{"data", "error", "infra_error", "delay", "by_call", "by_op", "request_clarification"}
	envelopeKeys = []string{"data", "error", "infra_error", "delay"}
)

// ParseFixtures reads every fixture in a file's bytes. defaultApp is the
// story used when a fixture has no app:. Documents whose test_kind is not
// "flow" (a cassette kept next to the flows, for instance) come back with a
// SkipReason.
func ParseFixtures(b []byte, file, defaultApp string) ([]*Fixture, error) {
	dec := yaml.NewDecoder(bytes.NewReader(yamlnode.TrimBOM(b)))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if err := yamlnode.CheckExpansion(&n, 0); err != nil {
			return nil, yamlnode.InFile(file, err)
		}
		if len(n.Content) == 0 {
			continue
		}
		docs = append(docs, &n)
	}
	base := filepath.Base(file)
	var out []*Fixture
	for i, d := range docs {
		fx, err := parseFixture(d.Content[0], file, defaultApp)
		if err != nil {
			return nil, yamlnode.InFile(file, err)
		}
		fx.File, fx.Index, fx.Name = file, i, base
		if len(docs) > 1 {
			fx.Name = base + "#" + strconv.Itoa(i+1)
		}
		out = append(out, fx)
	}
	return out, nil
}

// parseFixture reads one fixture document. A document whose test_kind is
// not flow is kept with the reason it is skipped; a flow is read key group
// by key group, the first error returned with where it is.
func parseFixture(n *yaml.Node, file, defaultApp string) (*Fixture, error) {
	fx := &Fixture{}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "test_kind" {
				fx.TestKind = n.Content[i+1].Value
			}
		}
	}
	if fx.TestKind != "flow" {
		fx.SkipReason = fmt.Sprintf("test_kind is %q, not flow", fx.TestKind)
		return fx, nil
	}
	m, err := fields(n, "fixture", fixtureKeys...)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)
	if err := fixtureApp(fx, m, dir, defaultApp); err != nil {
		return nil, err
	}
	if fx.InitialState, err = yamlnode.Str(m, "initial_state", "fixture"); err != nil {
		return nil, err
	}
	if fx.InitialWorld, _, err = yamlnode.Mapping(m, "initial_world", "fixture"); err != nil {
		return nil, err
	}
	if err := fixtureCassettes(fx, m, dir); err != nil {
		return nil, err
	}
	if err := fixtureHosts(fx, m, file); err != nil {
		return nil, err
	}
	if err := fixtureChecks(fx, m, file); err != nil {
		return nil, err
	}
	if err := fixtureTurns(fx, m, file, dir); err != nil {
		return nil, err
	}
	return fx, nil
}

// fixtureApp reads app:, the story under test: a story id (the story is
// found by id), or a path relative to the fixture. Without app: the flow
// runs the default story.
func fixtureApp(fx *Fixture, m map[string]*yaml.Node, dir, defaultApp string) error {
	var err error
	if fx.App, err = yamlnode.Str(m, "app", "fixture"); err != nil {
		return err
	}
	fx.AppPath, fx.defaultApp = defaultApp, defaultApp
	fx.appAt = at(m["app"])
	if isStoryID(fx.App) {
		// app: cloak-of-darkness names the story under test by its id.
		fx.AppID = fx.App
	} else if fx.App != "" {
		fx.AppPath = filepath.FromSlash(fx.App)
		if !filepath.IsAbs(fx.AppPath) {
			fx.AppPath = filepath.Join(dir, fx.AppPath)
		}
	}
	return nil
}

// fixtureCassettes reads the three cassettes a flow may replay (host
// calls, Starlark HTTP, Starlark inspect), each a path relative to the
// fixture, and keeps where each was written for later errors.
func fixtureCassettes(fx *Fixture, m map[string]*yaml.Node, dir string) error {
	var err error
	if fx.HostCassette, err = yamlnode.Str(m, "host_cassette", "fixture"); err != nil {
		return err
	}
	if fx.HostCassette != "" {
		fx.cassetteAt = at(m["host_cassette"])
		fx.CassettePath = filepath.FromSlash(fx.HostCassette)
		if !filepath.IsAbs(fx.CassettePath) {
			fx.CassettePath = filepath.Join(dir, fx.CassettePath)
		}
	}
	if fx.HTTPCassette, err = yamlnode.Str(m, "starlark_http_cassette", "fixture"); err != nil {
		return err
	}
	if fx.HTTPCassette != "" {
		fx.httpCassetteAt = at(m["starlark_http_cassette"])
		fx.HTTPCassettePath = filepath.FromSlash(fx.HTTPCassette)
		if !filepath.IsAbs(fx.HTTPCassettePath) {
			fx.HTTPCassettePath = filepath.Join(dir, fx.HTTPCassettePath)
		}
	}
	if fx.InspectCassette, err = yamlnode.Str(m, "starlark_inspect_cassette", "fixture"); err != nil {
		return err
	}
	if fx.InspectCassette != "" {
		fx.inspectCassetteAt = at(m["starlark_inspect_cassette"])
		fx.InspectCassettePath = filepath.FromSlash(fx.InspectCassette)
		if !filepath.IsAbs(fx.InspectCassettePath) {
			fx.InspectCassettePath = filepath.Join(dir, fx.InspectCassettePath)
		}
	}
	return nil
}

// fixtureHosts reads the flow's stand-ins for hosts (host_handlers stubs,
// which exclude a host cassette, and host_bindings) and the host calls it
// forbids. advance_clock at this level is refused with where it belongs.
func fixtureHosts(fx *Fixture, m map[string]*yaml.Node, file string) error {
	var err error
	if hn, ok := m["host_handlers"]; ok && hn.Tag != "!!null" {
		if fx.HostCassette != "" {
			return yamlnode.At(hn, "", "host_cassette and host_handlers are mutually exclusive")
		}
		if fx.HostHandlers, err = parseStubs(hn, file); err != nil {
			return err
		}
	}
	if bn, ok := m["host_bindings"]; ok && bn.Tag != "!!null" {
		if fx.HostBindings, err = parseBindings(bn, file); err != nil {
			return err
		}
	}
	if fx.ExpectNoHostCalls, fx.NoHostCallsOf, err = noHostCalls(m, file, "fixture"); err != nil {
		return err
	}
	if an, ok := m["advance_clock"]; ok {
		return bindingErr(file, an, "fixture.advance_clock is not supported at the top level: write advance_clock: on the turn after which the flow's clock moves (turns[i].advance_clock: \"2s\")")
	}
	return nil
}

// fixtureChecks reads the flow-wide expectations (expect_terminal,
// expect_no_errors, strict_cassette_coverage, expect_world_final, event
// counts, expect_files) and how the flow runs (mode, use_orchestrator).
func fixtureChecks(fx *Fixture, m map[string]*yaml.Node, file string) error {
	var err error
	bools := map[string]*bool{"expect_terminal": &fx.ExpectTerminal, "expect_no_errors": &fx.ExpectNoErrors,
		"strict_cassette_coverage": &fx.StrictCassetteCoverage}
	for _, key := range yamlnode.Written(m, "expect_terminal", "expect_no_errors", "strict_cassette_coverage") {
		if *bools[key], err = boolField(m, key, "fixture"); err != nil {
			return err
		}
	}
	if fx.ExpectWorldFinal, _, err = yamlnode.Mapping(m, "expect_world_final", "fixture"); err != nil {
		return err
	}
	for key, dst := range map[string]**int{"expect_events_count_atleast": &fx.ExpectEventsAtLeast, "expect_events_count_atmost": &fx.ExpectEventsAtMost} {
		v, ok := m[key]
		if !ok || v.Tag == "!!null" {
			continue
		}
		var n int
		if err := v.Decode(&n); err != nil || n < 0 {
			return yamlnode.At(v, "", "fixture.%s must be a whole number >= 0, got %q", key, v.Value)
		}
		*dst = &n
	}
	if fx.Mode, err = yamlnode.Str(m, "mode", "fixture"); err != nil {
		return err
	}
	if err := orchestrator.CheckExecMode(fx.Mode); err != nil {
		return bindingErr(file, m["mode"], "fixture.mode: %v", err)
	}
	if un, ok := m["use_orchestrator"]; ok && un.Tag != "!!null" {
		use, err := boolField(m, "use_orchestrator", "fixture")
		if err != nil {
			return err
		}
		fx.NoDispatch = !use
	}
	if en, ok := m["expect_files"]; ok && en.Tag != "!!null" {
		if fx.ExpectFiles, err = parseExpectFiles(en, file); err != nil {
			return err
		}
	}
	return nil
}

// fixtureTurns reads the turns and recording:. A flow with a recording,
// or with a turn of free input, gets the path of its recording file.
func fixtureTurns(fx *Fixture, m map[string]*yaml.Node, file, dir string) error {
	recording := ""
	if rn, ok := m["recording"]; ok && rn.Tag != "!!null" {
		if rn.Kind != yaml.ScalarNode || rn.Value == "" {
			return bindingErr(file, rn, "recording must be the path of a recording file (relative to the fixture), e.g. recording: ../recording.yaml")
		}
		recording = rn.Value
	}
	hasInput := false
	tn, ok := m["turns"]
	if ok && tn.Tag != "!!null" {
		if tn.Kind != yaml.SequenceNode {
			return yamlnode.At(tn, "", "turns must be a list, got %s", yamlnode.KindName(tn))
		}
		for i, t := range tn.Content {
			ts, err := parseTurn(t, i, file)
			if err != nil {
				return err
			}
			hasInput = hasInput || ts.Input != ""
			if ts.AdvanceClock > 0 {
				fx.AdvanceClock = true
			}
			fx.Turns = append(fx.Turns, ts)
		}
	}
	if recording != "" || hasInput {
		fx.RecordingPath = recordingPath(fx, dir, recording)
	}
	return nil
}

// fields is yamlnode.Fields with the values' aliases resolved, so that
// data: *stub reads as the mapping it names.
func fields(n *yaml.Node, where string, allowed ...string) (map[string]*yaml.Node, error) {
	m, err := yamlnode.Fields(n, where, allowed...)
	if err != nil {
		return nil, err
	}
	for k, v := range m {
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		m[k] = v
	}
	return m, nil
}

// clockDuration reads an advance_clock value: a Go duration, or a whole
// number of days ("11d"), which Go durations do not have.
func clockDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100000 {
			return 0, fmt.Errorf("invalid number of days %q", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// isStoryID reports whether app: names a story by id (cloak-of-darkness)
// rather than by path: no path separator and no .yaml/.yml extension.
func isStoryID(app string) bool {
	if app == "" || strings.ContainsAny(app, `/\`) {
		return false
	}
	ext := strings.ToLower(filepath.Ext(app))
	return ext != ".yaml" && ext != ".yml"
}

// noHostCalls reads expect_no_host_calls: true/false (no host call at
// all) or a list of handlers none of which may be called (each matches
// the handler exactly or an invoke name under it).
func noHostCalls(m map[string]*yaml.Node, file, where string) (bool, []string, error) {
	v, ok := m["expect_no_host_calls"]
	if !ok || v.Tag == "!!null" {
		return false, nil, nil
	}
	bad := func(what string) error {
		return bindingErr(file, v, "%s.expect_no_host_calls must be true, false or a list of handler names (e.g. [host.github, iface.ci.run_tests]), %s", where, what)
	}
	switch v.Kind {
	case yaml.ScalarNode:
		var b bool
		if err := v.Decode(&b); err != nil {
			return false, nil, bad(fmt.Sprintf("got %q", v.Value))
		}
		return b, nil, nil
	case yaml.SequenceNode:
		var out []string
		for i, e := range v.Content {
			if e.Kind == yaml.AliasNode && e.Alias != nil {
				e = e.Alias
			}
			if e.Kind != yaml.ScalarNode || e.Tag == "!!null" || strings.TrimSpace(e.Value) == "" {
				return false, nil, bindingErr(file, e, "%s.expect_no_host_calls[%d] must be a handler name (e.g. host.github), got %s", where, i, yamlnode.KindName(e))
			}
			out = append(out, e.Value)
		}
		if out == nil {
			out = []string{}
		}
		return false, out, nil
	}
	return false, nil, bad("got " + yamlnode.KindName(v))
}

func boolField(m map[string]*yaml.Node, key, where string) (bool, error) {
	v, ok := m[key]
	if !ok || v.Tag == "!!null" {
		return false, nil
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return false, yamlnode.At(v, "", "%s.%s must be true or false, got %q", where, key, v.Value)
	}
	return b, nil
}

func parseStubs(n *yaml.Node, file string) (map[string]*Stub, error) {
	m, err := fields(n, "host_handlers", "*")
	if err != nil {
		return nil, err
	}
	keyPos := map[string][2]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		keyPos[n.Content[i].Value] = [2]int{n.Content[i].Line, n.Content[i].Column}
	}
	out := map[string]*Stub{}
	for _, name := range yamlnode.Written(m) {
		sn := m[name]
		where := "host_handlers." + name
		sm, err := fields(sn, where, stubKeys...)
		if err != nil {
			return nil, err
		}
		st := &Stub{Line: keyPos[name][0], Col: keyPos[name][1]}
		if st.Envelope, err = parseEnvelope(sm, where, file); err != nil {
			return nil, err
		}
		st.Delay = st.Envelope.Delay
		if st.Clarification, err = yamlnode.Str(sm, "request_clarification", where); err != nil {
			return nil, err
		}
		by := map[string]*map[string]Envelope{"by_call": &st.ByCall, "by_op": &st.ByOp}
		for _, key := range yamlnode.Written(sm, "by_call", "by_op") {
			dst := by[key]
			bn, ok := sm[key]
			if !ok || bn.Tag == "!!null" {
				continue
			}
			bm, err := fields(bn, where+"."+key, "*")
			if err != nil {
				return nil, err
			}
			*dst = map[string]Envelope{}
			for _, id := range yamlnode.Written(bm) {
				en := bm[id]
				em, err := fields(en, where+"."+key+"."+id, envelopeKeys...)
				if err != nil {
					return nil, err
				}
				if (*dst)[id], err = parseEnvelope(em, where+"."+key+"."+id, file); err != nil {
					return nil, err
				}
			}
		}
		out[name] = st
	}
	return out, nil
}

func parseEnvelope(m map[string]*yaml.Node, where, file string) (Envelope, error) {
	var e Envelope
	var err error
	if d, ok := m["delay"]; ok && d.Tag != "!!null" {
		if d.Kind != yaml.ScalarNode {
			return e, bindingErr(file, d, "%s.delay must be a duration such as \"20ms\" or \"2s\", got %s", where, yamlnode.KindName(d))
		}
		if e.Delay, err = cassette.ParseDelay(d.Value); err != nil {
			return e, bindingErr(file, d, "%s.delay: %w", where, err)
		}
		e.HasDelay = true
	}
	if e.Data, e.HasData, err = yamlnode.Mapping(m, "data", where); err != nil {
		return e, err
	}
	if e.HasData {
		v, err := cassette.NormalizeJSON(e.Data)
		if err != nil {
			return e, bindingErr(file, m["data"], "%s.data: %w", where, err)
		}
		e.Data, _ = v.(map[string]any)
		if e.Data == nil {
			e.Data = map[string]any{}
		}
	}
	if e.Error, err = yamlnode.Str(m, "error", where); err != nil {
		return e, err
	}
	if e.InfraError, err = yamlnode.Str(m, "infra_error", where); err != nil {
		return e, err
	}
	if e.InfraError != "" && (e.HasData || e.Error != "") {
		return e, bindingErr(file, m["infra_error"], "%s: infra_error cannot be combined with data or error", where)
	}
	return e, nil
}

func parseTurn(n *yaml.Node, i int, file string) (*TurnSpec, error) {
	where := fmt.Sprintf("turns[%d]", i)
	m, err := fields(n, where, turnKeys...)
	if err != nil {
		return nil, err
	}
	ts := &TurnSpec{Line: n.Line}
	if an, ok := m["advance_clock"]; ok && an.Tag != "!!null" {
		d, err := clockDuration(an.Value)
		if an.Kind != yaml.ScalarNode || err != nil || d <= 0 {
			return nil, bindingErr(file, an, "%s.advance_clock must be a positive duration such as \"200ms\", \"2s\", \"9m\" or \"11d\", got %q", where, an.Value)
		}
		ts.AdvanceClock = d
	}
	if tn, ok := m["then"]; ok && tn.Tag != "!!null" {
		if tn.Kind != yaml.SequenceNode {
			return nil, bindingErr(file, tn, "%s.then must be a list of expectation blocks (- expect_state: done), got %s", where, yamlnode.KindName(tn))
		}
		for j, bn := range tn.Content {
			bw := fmt.Sprintf("%s.then[%d]", where, j)
			bm, err := fields(bn, bw, thenKeys...)
			if err != nil {
				return nil, err
			}
			b := &TurnSpec{Line: bn.Line}
			if err := parseExpectations(bm, bw, file, b); err != nil {
				return nil, err
			}
			ts.Then = append(ts.Then, b)
		}
	}
	if in, ok := m["intent"]; ok {
		switch in.Kind {
		case yaml.ScalarNode:
			ts.Intent = in.Value
		case yaml.MappingNode:
			im, err := fields(in, where+".intent", "name", "slots")
			if err != nil {
				return nil, err
			}
			if ts.Intent, err = yamlnode.Str(im, "name", where+".intent"); err != nil {
				return nil, err
			}
			if ts.Slots, _, err = yamlnode.Mapping(im, "slots", where+".intent"); err != nil {
				return nil, err
			}
		default:
			return nil, yamlnode.At(in, "", "%s.intent must be {name, slots}, got %s", where, yamlnode.KindName(in))
		}
	}
	if ts.Input, err = yamlnode.Str(m, "input", where); err != nil {
		return nil, err
	}
	if ts.DisplayInput, err = yamlnode.Str(m, "display_input", where); err != nil {
		return nil, err
	}
	if ts.DisplayInput != "" && ts.Input != "" {
		return nil, bindingErr(file, m["display_input"], "%s: display_input is the words an intent: turn records; a turn with input: records its input already", where)
	}
	if ts.WorldOverride, _, err = yamlnode.Mapping(m, "world_override", where); err != nil {
		return nil, err
	}
	if ts.Intent == "" && ts.Input == "" && ts.AdvanceClock == 0 {
		return nil, yamlnode.At(n, "", "%s: intent: {name, slots} is required (or advance_clock: alone, for a turn that only moves the clock)", where)
	}
	if err := parseExpectations(m, where, file, ts); err != nil {
		return nil, err
	}
	return ts, nil
}

// parseExpectations reads a turn's expect_* keys (also a then: block's).
func parseExpectations(m map[string]*yaml.Node, where, file string, ts *TurnSpec) error {
	var err error
	if err := parseExpectStateWorld(m, where, ts); err != nil {
		return err
	}
	if en, ok := m["expect_error"]; ok && en.Tag != "!!null" {
		if ts.ExpectError, err = parseExpectError(en, where+".expect_error"); err != nil {
			return err
		}
	}
	if rx, err := yamlnode.Str(m, "expect_view_matches", where); err != nil {
		return err
	} else if rx != "" {
		if ts.ExpectViewMatches, err = regexp.Compile(rx); err != nil {
			return yamlnode.At(m["expect_view_matches"], "", "%s.expect_view_matches: %w", where, err)
		}
	}
	if ts.ExpectNoView, err = boolField(m, "expect_no_view", where); err != nil {
		return err
	}
	if ts.ExpectNoHostCalls, ts.NoHostCallsOf, err = noHostCalls(m, file, where); err != nil {
		return err
	}
	if ts.ExpectWorldFinal, _, err = yamlnode.Mapping(m, "expect_world_final", where); err != nil {
		return err
	}
	if ts.ExpectWorldUnchanged, err = boolField(m, "expect_world_unchanged", where); err != nil {
		return err
	}
	if v, ok := m["expect_terminal"]; ok && v.Tag != "!!null" {
		b, err := boolField(m, "expect_terminal", where)
		if err != nil {
			return bindingErr(file, v, "%s.expect_terminal must be true or false (whether the session is in a terminal state after the turn), got %s", where, yamlnode.KindName(v))
		}
		ts.ExpectTerminal = &b
	}
	if hn, ok := m["expect_host_calls"]; ok && hn.Tag != "!!null" {
		if ts.ExpectHostCalls, err = parseExpectHostCalls(hn, where); err != nil {
			return err
		}
	}
	if in, ok := m["expect_inbox"]; ok && in.Tag != "!!null" {
		if ts.ExpectInbox, err = parseExpectInbox(in, where+".expect_inbox", file); err != nil {
			return err
		}
	}
	if jn, ok := m["expect_jobs"]; ok && jn.Tag != "!!null" {
		if ts.ExpectJobs, err = parseExpectJobs(jn, where+".expect_jobs", file); err != nil {
			return err
		}
	}
	if en, ok := m["expect_events_exact"]; ok && en.Tag != "!!null" {
		if ts.ExpectEventsExact, err = parseExpectEvents(en, where+".expect_events_exact"); err != nil {
			return err
		}
	}
	if en, ok := m["expect_events"]; ok && en.Tag != "!!null" {
		if ts.ExpectEvents, err = parseExpectEvents(en, where+".expect_events"); err != nil {
			return err
		}
	}
	return nil
}

// parseExpectStateWorld reads the expectations on where the turn ends and
// on its data: expect_state, expect_not_state, expect_state_in,
// expect_world, expect_world_full (an empty one means an empty world) and
// expect_slots.
func parseExpectStateWorld(m map[string]*yaml.Node, where string, ts *TurnSpec) error {
	var err error
	if ts.ExpectState, err = yamlnode.Str(m, "expect_state", where); err != nil {
		return err
	}
	_, ts.HasExpectState = m["expect_state"]
	if ts.ExpectNotState, err = yamlnode.Str(m, "expect_not_state", where); err != nil {
		return err
	}
	if sn, ok := m["expect_state_in"]; ok {
		if err := sn.Decode(&ts.ExpectStateIn); err != nil {
			return yamlnode.At(sn, "", "%s.expect_state_in must be a list of states", where)
		}
	}
	if ts.ExpectWorld, _, err = yamlnode.Mapping(m, "expect_world", where); err != nil {
		return err
	}
	if ts.ExpectWorldFull, ts.HasWorldFull, err = yamlnode.Mapping(m, "expect_world_full", where); err != nil {
		return err
	}
	if ts.HasWorldFull && ts.ExpectWorldFull == nil {
		ts.ExpectWorldFull = map[string]any{}
	}
	if ts.ExpectSlots, _, err = yamlnode.Mapping(m, "expect_slots", where); err != nil {
		return err
	}
	return nil
}

// parseExpectHostCalls reads expect_host_calls: a list of calls, each a
// handler (required) with the id, args and number of times it must show.
func parseExpectHostCalls(hn *yaml.Node, where string) ([]HostCallExpect, error) {
	var calls []HostCallExpect
	if hn.Kind != yaml.SequenceNode {
		return nil, yamlnode.At(hn, "", "%s.expect_host_calls must be a list", where)
	}
	for j, cn := range hn.Content {
		cw := fmt.Sprintf("%s.expect_host_calls[%d]", where, j)
		cm, err := fields(cn, cw, "handler", "id", "args", "times")
		if err != nil {
			return nil, err
		}
		var hc HostCallExpect
		if hc.Handler, err = yamlnode.Str(cm, "handler", cw); err != nil {
			return nil, err
		}
		if hc.Handler == "" {
			return nil, yamlnode.At(cn, "", "%s: handler is required", cw)
		}
		if hc.ID, err = yamlnode.Str(cm, "id", cw); err != nil {
			return nil, err
		}
		if hc.Args, _, err = yamlnode.Mapping(cm, "args", cw); err != nil {
			return nil, err
		}
		if tn, ok := cm["times"]; ok && tn.Tag != "!!null" {
			if err := tn.Decode(&hc.Times); err != nil || hc.Times < 0 {
				return nil, yamlnode.At(tn, "", "%s.times must be a whole number >= 0", cw)
			}
			hc.HasTime = true
		}
		calls = append(calls, hc)
	}
	return calls, nil
}

// parseExpectEvents reads an expect_events list. An entry is kind: (and
// optionally state_path:) plus what its payload must include: payload:
// (or effect:, as Kitsoki's fixtures write it) and/or payload keys written
// beside kind (from: foyer, to: cloakroom).
func parseExpectEvents(n *yaml.Node, where string) ([]EventExpect, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, yamlnode.At(n, "", "%s must be a list of {kind, payload keys}, got %s", where, yamlnode.KindName(n))
	}
	var out []EventExpect
	for i, en := range n.Content {
		ew := fmt.Sprintf("%s[%d]", where, i)
		em, err := fields(en, ew, "*")
		if err != nil {
			return nil, err
		}
		e := EventExpect{Line: en.Line}
		if e.Kind, err = yamlnode.Str(em, "kind", ew); err != nil {
			return nil, err
		}
		if e.Kind == "" {
			return nil, yamlnode.At(en, "", "%s: kind is required (a trace event kind, e.g. machine.transition)", ew)
		}
		if e.StatePath, err = yamlnode.Str(em, "state_path", ew); err != nil {
			return nil, err
		}
		_, e.HasStatePath = em["state_path"]
		payloadKey := ""
		for _, k := range []string{"payload", "effect"} {
			pm, ok, err := yamlnode.Mapping(em, k, ew)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if payloadKey != "" {
				return nil, yamlnode.At(em[k], "", "%s: payload and effect are the same thing (the event's payload); write one", ew)
			}
			payloadKey = k
			e.Payload = pm
			if e.Payload == nil {
				e.Payload = map[string]any{}
			}
		}
		for _, k := range sortedKeys(em) {
			switch k {
			case "kind", "state_path", "payload", "effect":
				continue
			}
			if _, dup := e.Payload[k]; dup {
				return nil, yamlnode.At(em[k], "", "%s: %q is given both beside kind and in %s", ew, k, payloadKey)
			}
			v, err := yamlnode.Value(em[k])
			if err != nil {
				return nil, yamlnode.At(em[k], ew+"."+k, "%w", errors.Unwrap(err))
			}
			if e.Payload == nil {
				e.Payload = map[string]any{}
			}
			e.Payload[k] = v
		}
		if e.Payload != nil {
			v, err := cassette.NormalizeJSON(e.Payload)
			if err != nil {
				return nil, yamlnode.At(en, "", "%s: %w", ew, err)
			}
			e.Payload, _ = v.(map[string]any)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseExpectError(n *yaml.Node, where string) (*ExpectError, error) {
	if n.Kind == yaml.ScalarNode { // expect_error: GUARD_FAILED
		return &ExpectError{Code: n.Value}, nil
	}
	m, err := fields(n, where, "code", "allowed_contains", "guard_hint", "missing_slots")
	if err != nil {
		return nil, err
	}
	ee := &ExpectError{}
	if ee.Code, err = yamlnode.Str(m, "code", where); err != nil {
		return nil, err
	}
	if ee.GuardHint, err = yamlnode.Str(m, "guard_hint", where); err != nil {
		return nil, err
	}
	if mn, ok := m["missing_slots"]; ok && mn.Tag != "!!null" {
		if mn.Kind != yaml.SequenceNode || mn.Decode(&ee.MissingSlots) != nil {
			return nil, yamlnode.At(mn, "", "%s.missing_slots must be a list of slot names, got %s", where, yamlnode.KindName(mn))
		}
	}
	if an, ok := m["allowed_contains"]; ok && an.Tag != "!!null" {
		switch an.Kind {
		case yaml.ScalarNode:
			ee.AllowedContains = []string{an.Value}
		default:
			if err := an.Decode(&ee.AllowedContains); err != nil {
				return nil, yamlnode.At(an, "", "%s.allowed_contains must be an intent name or a list of them", where)
			}
		}
	}
	return ee, nil
}

// count reads a whole number >= 0 for an expect_inbox / expect_jobs key.
func count(m map[string]*yaml.Node, key, where, file string) (*int, error) {
	v, ok := m[key]
	if !ok || v.Tag == "!!null" {
		return nil, nil
	}
	var n int
	if v.Kind != yaml.ScalarNode || v.Decode(&n) != nil || n < 0 {
		return nil, bindingErr(file, v, "%s.%s must be a whole number >= 0, got %q", where, key, v.Value)
	}
	return &n, nil
}

func parseExpectInbox(n *yaml.Node, where, file string) (*InboxExpect, error) {
	m, err := fields(n, where, "unread", "needs_attention", "severities")
	if err != nil {
		return nil, err
	}
	e := &InboxExpect{}
	if e.Unread, err = count(m, "unread", where, file); err != nil {
		return nil, err
	}
	if e.NeedsAttention, err = count(m, "needs_attention", where, file); err != nil {
		return nil, err
	}
	if sn, ok := m["severities"]; ok && sn.Tag != "!!null" {
		if sn.Kind != yaml.SequenceNode || sn.Decode(&e.Severities) != nil {
			return nil, bindingErr(file, sn, "%s.severities must be a list of severities (info, success, warn, error, action_required)", where)
		}
		for i, sev := range e.Severities {
			if err := inbox.CheckSeverity(sev); err != nil {
				return nil, bindingErr(file, sn.Content[i], "%s.severities[%d]: %v", where, i, err)
			}
		}
		if e.Severities == nil {
			e.Severities = []string{}
		}
		e.HasSeverities = true
	}
	return e, nil
}

// jobStatuses are the keys of expect_jobs besides total.
var jobStatuses = []string{"running", "awaiting_input", "done", "failed", "cancelled"}

func parseExpectJobs(n *yaml.Node, where, file string) (*JobsExpect, error) {
	if n.Kind == yaml.SequenceNode {
		return parseJobList(n, where, file)
	}
	if n.Kind != yaml.MappingNode {
		return nil, bindingErr(file, n, "%s must be a list of {namespace, status} (the jobs that ended this turn) or a mapping of counts {total, running, awaiting_input, done, failed, cancelled}, got %s", where, yamlnode.KindName(n))
	}
	m, err := fields(n, where, append([]string{"total"}, jobStatuses...)...)
	if err != nil {
		return nil, err
	}
	e := &JobsExpect{Counts: map[string]*int{}}
	if e.Total, err = count(m, "total", where, file); err != nil {
		return nil, err
	}
	for _, k := range jobStatuses {
		c, err := count(m, k, where, file)
		if err != nil {
			return nil, err
		}
		if c != nil {
			e.Counts[k] = c
		}
	}
	return e, nil
}

// terminalJobStatuses are the statuses a job reaches by the end of a turn
// that expect_jobs' list form matches.
var terminalJobStatuses = []string{"done", "failed", "cancelled", "awaiting_input"}

func parseJobList(n *yaml.Node, where, file string) (*JobsExpect, error) {
	e := &JobsExpect{List: []JobExpect{}}
	for i, en := range n.Content {
		ew := fmt.Sprintf("%s[%d]", where, i)
		m, err := fields(en, ew, "namespace", "status")
		if err != nil {
			return nil, err
		}
		j := JobExpect{Line: en.Line}
		if j.Namespace, err = yamlnode.Str(m, "namespace", ew); err != nil {
			return nil, err
		}
		if j.Status, err = yamlnode.Str(m, "status", ew); err != nil {
			return nil, err
		}
		if j.Namespace == "" {
			return nil, bindingErr(file, en, "%s: namespace is required (the job's handler, e.g. host.run)", ew)
		}
		if !contains(terminalJobStatuses, j.Status) {
			return nil, bindingErr(file, en, "%s.status %q is not one of %s%s", ew, j.Status, strings.Join(terminalJobStatuses, ", "), suggestion(j.Status, terminalJobStatuses))
		}
		e.List = append(e.List, j)
	}
	return e, nil
}

// FileExpect is one expect_files: entry: the file at Path (relative to the
// fixture's directory) exists and, with ContentMatches, its text matches;
// or, with MustNotExist, it does not exist.
type FileExpect struct {
	Path           string
	Abs            string // resolved against the fixture's directory
	ContentMatches *regexp.Regexp
	MustNotExist   bool
	at             yamlAt
}

// parseExpectFiles reads expect_files: a list of {path, content_matches,
// must_not_exist}.
func parseExpectFiles(n *yaml.Node, file string) ([]FileExpect, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, bindingErr(file, n, "fixture.expect_files must be a list of {path, content_matches, must_not_exist}, got %s", yamlnode.KindName(n))
	}
	dir := filepath.Dir(file)
	out := make([]FileExpect, 0, len(n.Content))
	for i, en := range n.Content {
		where := fmt.Sprintf("fixture.expect_files[%d]", i)
		m, err := fields(en, where, "path", "content_matches", "must_not_exist")
		if err != nil {
			return nil, err
		}
		fe := FileExpect{at: at(en)}
		if fe.Path, err = yamlnode.Str(m, "path", where); err != nil {
			return nil, err
		}
		if fe.Path == "" {
			return nil, bindingErr(file, en, "%s: path is required (relative to the fixture's directory)", where)
		}
		fe.Abs = filepath.FromSlash(fe.Path)
		if !filepath.IsAbs(fe.Abs) {
			fe.Abs = filepath.Join(dir, fe.Abs)
		}
		rx, err := yamlnode.Str(m, "content_matches", where)
		if err != nil {
			return nil, err
		}
		if rx != "" {
			if fe.ContentMatches, err = regexp.Compile(rx); err != nil {
				return nil, bindingErr(file, m["content_matches"], "%s.content_matches: %v", where, err)
			}
		}
		if fe.MustNotExist, err = boolField(m, "must_not_exist", where); err != nil {
			return nil, err
		}
		if fe.MustNotExist && fe.ContentMatches != nil {
			return nil, bindingErr(file, en, "%s: must_not_exist: true cannot be combined with content_matches:", where)
		}
		out = append(out, fe)
	}
	return out, nil
}

// suggestion is ` (did you mean "x"?)` for the candidate within two edits
// of word, or "".
func suggestion(word string, cands []string) string {
	if best := nearmiss.Closest(word, cands, 2); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
