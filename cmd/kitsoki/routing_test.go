package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const routingStory = "testdata/routing/app.yaml"

// routedTiers reads a trace: the tier of each turn.routed, in order, and
// whether every agent.call.start carries purpose "route". Every line is
// checked against the published trace schema.
func routedTiers(t *testing.T, path string) (tiers []string, routeCalls int) {
	t.Helper()
	checkTraceSchema(t, path)
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		switch evs[i].Kind {
		case trace.KindTurnRouted:
			var p trace.TurnRouted
			if err := trace.Decode(&evs[i], &p); err != nil {
				t.Fatal(err)
			}
			tiers = append(tiers, p.Tier)
		case trace.KindAgentCallStart:
			var p trace.AgentCallStart
			if err := trace.Decode(&evs[i], &p); err != nil {
				t.Fatal(err)
			}
			if p.Purpose != "route" {
				t.Errorf("agent.call.start purpose = %q, want route", p.Purpose)
			}
			routeCalls++
		}
	}
	return tiers, routeCalls
}

// TestFreeTextDrivesAStory drives the weather desk from free text, with the
// subprocess router plugin and with a cassette router, from --say and from
// stdin: the router sends "…Tokyo" to forecast, the shown state's
// default_intent takes the chat, and the exact title leaves.
func TestFreeTextDrivesAStory(t *testing.T) {
	says := []string{"show me the forecast for Tokyo", "how windy will it get", "Leave the desk"}
	tests := []struct {
		name  string
		args  []string
		stdin string
	}{
		{"subprocess router, --say", []string{"--say", says[0], "--say", says[1], "--say", says[2]}, ""},
		{"subprocess router, stdin", nil, strings.Join(says, "\n") + "\n"},
		{"cassette router, --say", []string{"--cassette", "testdata/routing/cassettes/router.yaml", "--say", says[0], "--say", says[1], "--say", says[2]}, ""},
		{"cassette router, stdin", []string{"--cassette", "testdata/routing/cassettes/router.yaml"}, "# a comment\n" + strings.Join(says, "\n") + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := filepath.Join(t.TempDir(), "t.jsonl")
			args := append([]string{"run", routingStory, "--trace", tr}, tt.args...)
			code, out, errs := runCLI(t, tt.stdin, args...)
			if code != exitOK {
				t.Fatalf("exit %d, want 0\n%s", code, errs)
			}
			if want := "Forecast for Tokyo: sunny\n(noted: how windy will it get)\nForecast for Tokyo: sunny\nBye.\n"; out != want {
				t.Errorf("stdout = %q, want %q", out, want)
			}
			tiers, calls := routedTiers(t, tr)
			if d := cmp.Diff([]string{"router", "default_intent", "exact"}, tiers); d != "" {
				t.Errorf("tiers (-want +got):\n%s", d)
			}
			if calls != 1 {
				t.Errorf("%d router calls, want 1", calls)
			}
		})
	}
}

// TestFreeTextRecordThenReplay records the subprocess router's answer with
// --record and replays it with --cassette.
func TestFreeTextRecordThenReplay(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "router.yaml")
	if code, _, errs := runCLI(t, "", "run", routingStory, "--trace", filepath.Join(dir, "a.jsonl"), "--record", cas, "--say", "I am done"); code != exitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	b, err := os.ReadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "handler: agent.router") || !strings.Contains(string(b), `"intent":"quit"`) {
		t.Errorf("cassette does not hold the router call:\n%s", b)
	}
	tr := filepath.Join(dir, "b.jsonl")
	code, out, errs := runCLI(t, "", "run", routingStory, "--trace", tr, "--cassette", cas, "--say", "I am done")
	if code != exitOK || out != "Bye.\n" {
		t.Fatalf("replay: exit %d, stdout %q\n%s", code, out, errs)
	}
	if tiers, _ := routedTiers(t, tr); !cmp.Equal(tiers, []string{"router"}) {
		t.Errorf("tiers = %v", tiers)
	}
}

// TestFreeTextRephrase: an answer below the bar, or "none", asks to
// rephrase and lists the allowed intents (exit 3 in a script).
func TestFreeTextRephrase(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"low confidence", []string{"--say", "maybe later"}, exitRejected,
			"NO_MATCH: not sure what \"maybe later\" means here (maybe quit, confidence 0.20 < 0.50); rephrase, or type one of: forecast, quit\nkitsoki: stopped at --say 1: maybe later\n"},
		{"low confidence passes a lower bar", []string{"--say", "maybe later", "--min-confidence", "0.1"}, exitOK, ""},
		{"none", []string{"--say", "xyzzy"}, exitRejected,
			"NO_MATCH: could not tell what \"xyzzy\" means here; rephrase, or type one of: forecast, quit\nkitsoki: stopped at --say 1: xyzzy\n"},
		// An example of an intent with a required slot it does not fill is
		// no exact match (as in Kitsoki): the router is asked.
		{"example without its slot goes to the router", []string{"--say", "what's the weather"}, exitRejected,
			"NO_MATCH: could not tell what \"what's the weather\" means here; rephrase, or type one of: forecast, quit\nkitsoki: stopped at --say 1: what's the weather\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := filepath.Join(t.TempDir(), "t.jsonl")
			code, _, errs := runCLI(t, "", append([]string{"run", routingStory, "--trace", tr}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errs)
			}
			if tt.want != "" {
				if _, rest, _ := strings.Cut(errs, "\n"); rest != tt.want { // the first line names the session
					t.Errorf("stderr = %q, want %q", rest, tt.want)
				}
			}
		})
	}
}

// TestSemanticRoutingFlag: the template tier runs only when enabled, by
// flag or environment; the router (which says none to "Paris") is not
// asked then.
func TestSemanticRoutingFlag(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		code int
	}{
		{"off by default", "", nil, exitRejected},
		{"flag", "", []string{"--semantic-routing"}, exitIncomplete},
		{"env", "on", nil, exitIncomplete},
		{"flag wins over env", "1", []string{"--semantic-routing=false"}, exitRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(semanticRoutingEnv, tt.env)
			tr := filepath.Join(t.TempDir(), "t.jsonl")
			code, out, errs := runCLI(t, "", append([]string{"run", routingStory, "--trace", tr, "--say", "forecast for Paris"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errs)
			}
			if tt.code == exitIncomplete {
				if out != "Forecast for paris: sunny\n" {
					t.Errorf("stdout = %q", out)
				}
				if tiers, calls := routedTiers(t, tr); !cmp.Equal(tiers, []string{"template"}) || calls != 0 {
					t.Errorf("tiers %v, router calls %d; want [template], 0", tiers, calls)
				}
			}
		})
	}
}

func TestRoutingFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		code int
		want string
	}{
		{"say and intents", "", []string{"--say", "x", "--intents", "quit"}, exitUsage,
			"--say and --intents cannot be combined: give the turns as one of them (a free-text line on stdin works too)"},
		{"unknown router", "", []string{"--say", "x", "--router", "agent.nope"}, exitFailure,
			`--router "agent.nope" is not declared in the story's agent_plugins (declared: agent.claude, agent.router)`},
		{"confidence out of range", "", []string{"--say", "x", "--min-confidence", "2"}, exitFailure,
			"--min-confidence 2: want a number from 0 to 1"},
		{"bad env", "maybe", []string{"--say", "x"}, exitFailure,
			`KITSOKI_SEMANTIC_ROUTING="maybe": want 1/true/on or 0/false/off`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(semanticRoutingEnv, tt.env)
			code, _, errs := runCLI(t, "", append([]string{"run", routingStory, "--trace", filepath.Join(t.TempDir(), "t.jsonl")}, tt.args...)...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tt.code, tt.want)
			}
		})
	}
}

// TestFreeTextBuiltinRouter: --router agent.claude takes the built-in
// path, whose decide a host cassette answers by call: route.
func TestFreeTextBuiltinRouter(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", routingStory, "--trace", tr, "--router", "agent.claude",
		"--cassette", "testdata/routing/cassettes/builtin.yaml", "--say", "I am done")
	if code != exitOK || out != "Bye.\n" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errs)
	}
	if tiers, _ := routedTiers(t, tr); !cmp.Equal(tiers, []string{"router"}) {
		t.Errorf("tiers = %v, want [router]", tiers)
	}
}

// Free text with no model: a typed line said as free text fills its
// slots, and "greet Ada" fills the one required slot, with no router. A
// sentence that needs the router, when the router's program is not
// installed, gets one line saying which agent, how to install it and how
// to type the intent instead.
func TestFreeTextWithoutAModel(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no claude here
	for _, say := range []string{"greet name=Ada", "greet Ada"} {
		code, out, errs := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--say", say, "--say", "bye")
		if code != exitOK || !strings.Contains(out, "Hey Ada, good to see you!") {
			t.Errorf("--say %q: exit %d\n%s%s", say, code, out, errs)
		}
	}
	code, _, errs := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--say", "please say hi to my friend")
	want := `ROUTER_FAILED: "please say hi to my friend" needs the router agent agent.claude, whose program claude is not installed: ` +
		"install it (npm install -g @anthropic-ai/claude-code; see docs/agents/claude.md), or type the intent instead: bye, greet name=Ada\n"
	if code != exitAgent || !strings.Contains(errs, want) {
		t.Errorf("exit %d\n%s\nwant the line %q", code, errs, want)
	}
	// A router that is a plugin program: named, with no install command.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(`app: {id: r}
agent_plugins:
  agent.router: {plugin: subprocess, command: kitsoki-no-such-router}
routing: {agent: agent.router}
intents:
  add: {slots: {item: {type: string, required: true}}}
  done: {}
root: list
states:
  list: {on: {add: [{target: .}], done: [{target: end}]}}
  end: {terminal: true}
`), 0o600)
	code, _, errs = runCLI(t, "", "run", filepath.Join(dir, "app.yaml"), "--trace", filepath.Join(dir, "t.jsonl"), "--say", "put milk on it")
	want = `ROUTER_FAILED: "put milk on it" needs the router agent agent.router, whose program kitsoki-no-such-router is not installed: ` +
		"install it, or type the intent instead: add item=<item>, done\n"
	if code != exitAgent || !strings.Contains(errs, want) {
		t.Errorf("exit %d\n%s\nwant the line %q", code, errs, want)
	}
}
