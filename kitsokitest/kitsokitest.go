// Package kitsokitest runs kitsoki stories in go test: a story's flow
// fixtures as subtests (RunFlows, what `kitsoki test flows` runs), a
// session replayed from a recorded cassette (Replay), and a cassette-backed
// agent to bind with kitsoki.WithAgent (CassetteAgent).
//
//	func TestFlows(t *testing.T) { kitsokitest.RunFlows(t, "stories/hello/app.yaml") }
//
//	func TestReplay(t *testing.T) {
//		s := kitsokitest.Replay(t, "stories/hello/app.yaml", "stories/hello/cassettes/demo.yaml")
//		out := s.Step("greet name=Ada style=formal")
//		...
//	}
package kitsokitest

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/check/testrunner"
	"github.com/kitsoki/kitsoki/internal/run/replay"
)

// Epoch returns where the clock of a flow, a Replay and a CassetteAgent
// starts: 2026-01-01T00:00:00Z. Their clocks move only by cassette delays,
// so those are instant and traces are reproducible.
func Epoch() time.Time { return testrunner.FlowEpoch }

// Option configures RunFlows.
type Option func(*flowsConfig)

type flowsConfig struct {
	glob      string
	strict    bool
	lenient   bool
	workspace string
	logger    *slog.Logger
}

// WithFlows picks the fixture files, as `kitsoki test flows --flows` does
// (default: <app dir>/flows/*.yaml when that directory exists, else
// ./flows/*.yaml, else <app path without extension>-flows/*.yaml).
func WithFlows(glob string) Option { return func(c *flowsConfig) { c.glob = glob } }

// WithCassetteStrict makes every host_cassette refuse an episode recorded
// for a different request, as `--cassette-strict` does.
func WithCassetteStrict() Option { return func(c *flowsConfig) { c.strict = true } }

// WithLenientCassette lets a flow's cassette (RunFlows) or a
// CassetteAgent answer a request that differs from the one an episode was
// recorded for (its request_hash) with a logged warning; without it such
// a request fails the (sub)test.
func WithLenientCassette() Option { return func(c *flowsConfig) { c.lenient = true } }

// WithWorkspace sets the directory every file a story names must stay
// inside, as `--workspace` does.
func WithWorkspace(dir string) Option { return func(c *flowsConfig) { c.workspace = dir } }

// WithLogger sets the logger of the flows' sessions (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *flowsConfig) { c.logger = l } }

// RunFlows runs every flow fixture of the story at appPath as a subtest
// of t, one per fixture, named after its file. A failing check fails the
// subtest with the message `kitsoki test flows` prints under the turn,
// prefixed with where it failed ("turn 2 → greeted: expect_state: ..." or
// "[session]: ..."); a fixture that cannot run (its story, or a cassette,
// does not load) fails with the setup error `kitsoki test flows` exits 2
// with. A cassette episode answering a request other than the one it was
// recorded for fails the subtest (WithLenientCassette logs it instead);
// other cassette warnings and dropped host calls are logged.
func RunFlows(t *testing.T, appPath string, opts ...Option) {
	t.Helper()
	var cfg flowsConfig
	for _, o := range opts {
		o(&cfg)
	}
	fixtures, err := testrunner.LoadFixtures(appPath, cfg.glob)
	if err != nil {
		t.Fatalf("kitsoki test flows: %v", err)
	}
	fopts := []testrunner.FlowOption{testrunner.WithCassetteStrict(cfg.strict), testrunner.WithFlowWorkspace(cfg.workspace)}
	if cfg.logger != nil {
		fopts = append(fopts, testrunner.WithFlowLogger(cfg.logger))
	}
	r := testrunner.NewRunner(fopts...)
	t.Cleanup(func() { r.Close() })
	for _, fx := range fixtures {
		// happy_path.yaml runs as happy_path; the second document of a
		// multi-document file x.yaml as x#2.
		base, n, multi := strings.Cut(fx.Name, "#")
		name := strings.TrimSuffix(base, filepath.Ext(base))
		if multi {
			name += "#" + n
		}
		t.Run(name, func(t *testing.T) {
			rep, err := r.RunFixtures(t.Context(), []*testrunner.Fixture{fx}, false, nil)
			if err != nil {
				t.Fatalf("kitsoki test flows: %v", err)
			}
			if e := rep.Results[0].SetupError; e != "" {
				t.Fatalf("kitsoki test flows: %s", e)
			}
			report(t, rep.Results[0], cfg.lenient)
		})
	}
}

// report turns one flow's result into the subtest's verdict.
func report(t *testing.T, res *testrunner.FlowResult, lenient bool) {
	t.Helper()
	for _, w := range res.Warnings {
		if !lenient && strings.Contains(w, "recorded for a different request") {
			t.Errorf("%s\nkitsokitest.RunFlows fails a request that differs from its recording: record the cassette again, or pass kitsokitest.WithLenientCassette()", w)
			continue
		}
		t.Logf("warning: %s", w)
	}
	if res.Skipped {
		t.Skip(res.SkipReason)
	}
	if n := res.DroppedHostCalls; n > 0 {
		t.Logf("%d host call(s) dropped: the fixture has no stubs", n)
	}
	for _, tr := range res.Turns {
		where := "[session]"
		if tr.TurnIndex != testrunner.SessionIndex {
			where = "turn " + strconv.Itoa(tr.TurnIndex+1) + " → " + tr.NewState
		}
		for _, msg := range tr.Failures {
			t.Errorf("%s: %s", where, msg)
		}
	}
}

// Replayed is a started session whose agents and hosts answer from a
// cassette.
type Replayed struct {
	*kitsoki.Session
	// Start is the outcome of turn 0 (the root state's entry).
	Start *kitsoki.Outcome
	t     testing.TB
}

// Replay opens the story at appPath with the cassette at cassettePath in
// place of its agents and hosts (kitsoki.WithCassette), on a clock that
// starts at Epoch, and starts the session; opts come after those, so they
// can bind an agent the cassette does not cover. A failure to open or
// start fails the test; the session is closed when the test ends.
//
// The replay is strict (kitsoki.WithCassetteStrict): a request that
// differs from the one an episode was recorded for (its request_hash) is
// not answered from it, so the call misses and Step fails the test,
// saying so. A test that means to replay changed requests passes
// Lenient(): the episode answers and the outcome carries a warning.
func Replay(t testing.TB, appPath, cassettePath string, opts ...kitsoki.Option) *Replayed {
	t.Helper()
	base := []kitsoki.Option{kitsoki.WithCassette(cassettePath), kitsoki.WithStartTime(Epoch()), kitsoki.WithCassetteStrict()}
	s, err := kitsoki.Open(appPath, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("kitsokitest.Replay: close: %v", err)
		}
	})
	out, err := s.Start(context.Background())
	if err != nil {
		t.Fatalf("kitsokitest.Replay: start: %v%s", err, strictHint(err))
	}
	logWarnings(t, "start", out)
	return &Replayed{Session: s, Start: out, t: t}
}

// Step takes a turn from a typed line ("greet name=Ada style=formal") and
// returns its outcome. Any error (a parse error, a rejection, a fault, an
// unhandled call failure, a cassette miss) fails the test with its text;
// replay warnings are logged. Use Do or Turn to check an error yourself.
func (r *Replayed) Step(line string) *kitsoki.Outcome {
	r.t.Helper()
	out, err := r.Do(context.Background(), line)
	if out != nil {
		logWarnings(r.t, line, out)
	}
	if err != nil {
		r.t.Fatalf("%q: %v%s", line, err, strictHint(err))
	}
	return out
}

// Lenient lets Replay answer a request that differs from its recording
// from the recorded episode, with a warning (logged by Step), instead of
// failing the test.
func Lenient() kitsoki.Option { return kitsoki.WithCassetteLenient() }

// strictHint explains a miss the strict replay caused.
func strictHint(err error) string {
	var miss *kitsoki.ReplayMissError
	if !errors.As(err, &miss) || !strings.Contains(miss.Error(), "recorded for a different request") {
		return ""
	}
	return "\nkitsokitest.Replay refuses a request that differs from its recording: record the cassette again, or pass kitsokitest.Lenient() to replay it anyway"
}

func logWarnings(t testing.TB, what string, out *kitsoki.Outcome) {
	t.Helper()
	for _, w := range out.Warnings {
		t.Logf("%q: warning: %s", what, w)
	}
}

// CassetteAgent returns an agent that answers from the cassette at
// cassettePath the calls routed to alias, as the cassette transport does:
// episodes whose match.handler is alias, matched on the request's verb and
// with: arguments (and phase). Bind it with kitsoki.WithAgent(alias, ...)
// to replay one agent while others, and the hosts, stay live or Go funcs.
// Episode delays are instant. A call no episode matches fails as
// transport_error, and fails the test when it ends; a cassette that does
// not load fails the test at once. An episode that answered a request
// other than the one it was recorded for (its request_hash) fails the
// test when it ends, unless opts hold WithLenientCassette (then it is
// logged).
func CassetteAgent(t testing.TB, cassettePath, alias string, opts ...Option) kitsoki.AgentFunc {
	t.Helper()
	var cfg flowsConfig
	for _, o := range opts {
		o(&cfg)
	}
	c, err := replay.Load(cassettePath, cassette.WithClock(clock.NewFake(Epoch())))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agent(alias, nil)
	t.Cleanup(func() {
		for _, m := range c.TakeMisses() {
			t.Errorf("kitsokitest.CassetteAgent(%q): cassette %s: %s", alias, cassettePath, m)
		}
		for _, w := range c.TakeWarnings() {
			if !cfg.lenient && strings.Contains(w, "recorded for a different request") {
				t.Errorf("kitsokitest.CassetteAgent(%q): %s\nkitsokitest.CassetteAgent fails a request that differs from its recording: record the cassette again, or pass kitsokitest.WithLenientCassette()", alias, w)
				continue
			}
			t.Logf("kitsokitest.CassetteAgent(%q): warning: %s", alias, w)
		}
	})
	return func(ctx context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
		resp, err := a.Ask(ctx, agent.NewCall(req))
		var ae *agent.AskError
		if errors.As(err, &ae) {
			detail := ae.Detail
			if detail == "" && ae.Err != nil {
				detail = ae.Err.Error()
			}
			return resp, &kitsoki.AgentError{Kind: kitsoki.ErrorKind(ae.Kind), Detail: detail}
		}
		return resp, err
	}
}
