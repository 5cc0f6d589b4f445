package cassette

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

func TestCassetteLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		yml  string
		env  map[string]string
		want string // the whole error after `cassette: <path>`: its position, key path and message
	}{
		{"wrong kind", "kind: flow\n", nil, `:1:7: kind: must be "host_cassette", got "flow"`},
		{"missing kind", "episodes: []\n", nil, `:1:1: kind: must be "host_cassette", got ""`},
		{"empty file", "", nil, `: kind: must be "host_cassette", got ""`},
		{"bad record_mode", "kind: host_cassette\nrecord_mode: all\n", nil,
			`:2:14: record_mode: "all" is not supported; valid values are "none" or "new_episodes"`},
		{"bad env record mode", "kind: host_cassette\n", map[string]string{EnvRecord: "once"},
			`: KITSOKI_CASSETTE_RECORD: record_mode "once" is not supported; valid values are "none" or "new_episodes"`},
		{"strict with file mode", "kind: host_cassette\nrecord_mode: new_episodes\n", map[string]string{EnvStrict: "1"},
			`: KITSOKI_CASSETTE_STRICT=1 but cassette record mode is "new_episodes"`},
		{"strict true with env mode", "kind: host_cassette\n", map[string]string{EnvStrict: "true", EnvRecord: "new_episodes"},
			`: KITSOKI_CASSETTE_STRICT=1 but cassette record mode is "new_episodes"`},
		{"unknown top key", "kind: host_cassette\nepisode: []\n", nil,
			`:2:1: cassette.episode: unknown key "episode" (did you mean "episodes"?) (valid: kind, app_id, app_version, source_run, generated_at, match_on, record_mode, phase_from, episodes)`},
		{"unknown episode key", "kind: host_cassette\nepisodes:\n  - {id: a, respons: {}}\n", nil,
			`:3:13: episodes[0].respons: unknown key "respons" (did you mean "response"?) (valid: id, match, request_hash, response, delay, replay, agent)`},
		{"infra with data", "kind: host_cassette\nepisodes:\n  - {id: a, response: {data: {}, infra_error: boom}}\n", nil,
			`:3:5: episodes[0].response.infra_error: cannot be combined with data or error`},
		{"no response", "kind: host_cassette\nepisodes:\n  - {id: a, match: {handler: h}}\n", nil,
			`:3:5: episodes[0]: needs a response: data, error or infra_error (or an agent: block)`},
		{"replay not any", "kind: host_cassette\nepisodes:\n  - {id: a, replay: always, response: {data: {}}}\n", nil,
			`:3:21: episodes[0].replay: must be "any" (reusable) or absent, got "always"`},
		{"bad delay", "kind: host_cassette\nepisodes:\n  - {id: a, delay: soon, response: {data: {}}}\n", nil,
			`:3:20: episodes[0].delay: "soon" is not a duration (write e.g. 200ms, 2s, 3d)`},
		{"delay twice", "kind: host_cassette\nepisodes:\n  - {id: a, delay: 1s, response: {data: {}, delay: 2s}}\n", nil,
			`:3:52: episodes[0].response.delay: delay is written both on the episode and in response`},
		{"phase_from without group", "kind: host_cassette\nphase_from: 'review'\n", nil,
			`:2:13: phase_from: "review" has no capture group; its first group is the phase`},
		{"match not a map", "kind: host_cassette\nepisodes:\n  - {id: a, match: [h], response: {data: {}}}\n", nil,
			`:3:20: episodes[0].match: must be a mapping, got a list`},
		{"unknown agent key", "kind: host_cassette\nepisodes:\n  - {id: a, agent: {verb: ask, tokens: 3}}\n", nil,
			`:3:32: episodes[0].agent.tokens: unknown key "tokens" (valid: verb, agent, model, turn, duration_ms, prompt_tokens, response_tokens, cost_usd, system_prompt, prompt, input, response, submission, error, call_id, transcript)`},
		{"unknown transcript key", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      verb: ask\n      transcript: {format: claude-stream-json, event: []}\n", nil,
			`:6:48: episodes[0].agent.transcript.event: unknown key "event" (did you mean "events"?) (valid: format, events, timings)`},
		{"transcript event not JSON", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      verb: ask\n      transcript: {events: ['{\"type\": ']}\n", nil,
			`:6:29: episodes[0].agent.transcript.events[0]: is not a JSON line: write the event as one line of JSON, or as a mapping`},
		{"transcript timing", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      verb: ask\n      transcript: {events: [{type: result}], timings: [0, soon]}\n", nil,
			`:6:59: episodes[0].agent.transcript.timings[1]: must be a whole number of milliseconds >= 0, got "soon"`},
		{"transcript event on several lines", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      transcript:\n        events:\n          - |\n            {\"type\":\n             \"result\"}\n", nil,
			`:7:13: episodes[0].agent.transcript.events[0]: spans several lines: a transcript event is one line of JSON; write it on one line, or as a mapping`},
		{"transcript event a number", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      transcript: {events: [42]}\n", nil,
			`:5:29: episodes[0].agent.transcript.events[0]: must be a JSON line (a quoted string) or a mapping, got a scalar "42"`},
		{"transcript events not a list", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      transcript: {events: '{}'}\n", nil,
			`:5:28: episodes[0].agent.transcript.events: must be a list of events (a JSON line each, or a mapping), got a scalar "{}"`},
		{"transcript more timings than events", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      transcript: {events: ['{}'], timings: [0, 10]}\n", nil,
			`:5:45: episodes[0].agent.transcript.timings: has 2 offsets for 1 events: give at most one offset per event, in the events' order`},
		{"transcript format not a string", "kind: host_cassette\nepisodes:\n  - id: a\n    agent:\n      transcript: {format: [x], events: ['{}']}\n", nil,
			`:5:28: episodes[0].agent.transcript.format: must be a string, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			_, err := Parse([]byte(tt.yml), path, WithGetenv(func(k string) string { return tt.env[k] }))
			want := `cassette: ` + path + tt.want
			if err == nil || err.Error() != want {
				t.Errorf("error:\n got %v\nwant %s", err, want)
			}
		})
	}
}

func TestCassetteFields(t *testing.T) {
	c := mustCassette(t, `kind: host_cassette
app_id: expense-triage
app_version: 1.2.3
source_run: run-7
generated_at: "2026-01-01T00:00:00Z"
match_on: [handler, call]
record_mode: ""
episodes:
  - match: {handler: h}
    response: {data: {n: 1, f: 0.5, big: 9007199254740993}, delay: 3d}
  - id: second
    replay: any
    delay: 1d12h
    response: {error: nope}
  - id: third
    agent: {verb: ask, response: {decision: approve, list: [1, 2]}}
`)
	if c.Mode() != ModeNone || c.AppID != "expense-triage" || c.AppVersion != "1.2.3" || c.SourceRun != "run-7" {
		t.Errorf("header = %+v", c)
	}
	if c.Episodes[0].ID != "episode_1" {
		t.Errorf("default id = %q, want episode_1", c.Episodes[0].ID)
	}
	if c.Episodes[0].Delay != 72*time.Hour || c.Episodes[1].Delay != 36*time.Hour {
		t.Errorf("delays = %v, %v", c.Episodes[0].Delay, c.Episodes[1].Delay)
	}
	wantData := map[string]any{"n": int64(1), "f": 0.5, "big": int64(9007199254740993)}
	if d := cmp.Diff(wantData, c.Episodes[0].Response.Data); d != "" {
		t.Errorf("data normalised (-want +got):\n%s", d)
	}
	if !c.Episodes[1].Reusable || c.Episodes[1].Response.Error != "nope" {
		t.Errorf("episode 2 = %+v", c.Episodes[1])
	}
	if got := c.Episodes[2].Agent.Response; got != `{"decision":"approve","list":[1,2]}` {
		t.Errorf("agent.response written as a mapping = %s", got)
	}
}

func TestIncludeExpansion(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"c.yaml": `kind: host_cassette
episodes:
  - id: a
    match: {handler: h}
    response: {data: !include data/verdict.json}
    agent: {verb: decide, prompt: !include prompts/p.md, response: !include data/verdict.json}
`,
		"data/verdict.json": "{\n  \"decision\": \"approve\",\n  \"confidence\": 0.9\n}\n",
		"prompts/p.md":      "Line one\n\"quoted\"\n",
	})
	c, err := Load(filepath.Join(dir, "c.yaml"), WithGetenv(testkit.NoEnv))
	if err != nil {
		t.Fatal(err)
	}
	ep := c.Episodes[0]
	if d := cmp.Diff(map[string]any{"decision": "approve", "confidence": 0.9}, ep.Response.Data); d != "" {
		t.Errorf("json include (-want +got):\n%s", d)
	}
	if ep.Agent.Prompt != "Line one\n\"quoted\"\n" {
		t.Errorf("text include = %q", ep.Agent.Prompt)
	}
	if ep.Agent.Response != `{"decision":"approve","confidence":0.9}` {
		t.Errorf("json include into a string field = %q (want compact JSON)", ep.Agent.Response)
	}
}

func TestIncludeRefused(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.json"), []byte(`{"x":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, value, want string
	}{
		{"absolute", filepath.Join(outside, "secret.json"), "absolute paths are not allowed"},
		{"parent", "../secret.json", "the path leaves the cassette's directory"},
		{"symlink", "link/secret.json", "the path leaves the cassette's directory (through a symlink)"},
		{"missing", "nope.json", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.Tree(t, map[string]string{"c.yaml": "kind: host_cassette\nepisodes:\n  - {id: a, response: {data: !include '" + tt.value + "'}}\n"})
			if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			_, err := Load(filepath.Join(dir, "c.yaml"), WithGetenv(testkit.NoEnv))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "c.yaml:3:30: !include") {
				t.Errorf("error = %v, want it to say %q at line 3", err, tt.want)
			}
		})
	}
	t.Run("key side", func(t *testing.T) {
		dir := testkit.Tree(t, map[string]string{"c.yaml": "kind: host_cassette\n!include k: v\n"})
		_, err := Load(filepath.Join(dir, "c.yaml"), WithGetenv(testkit.NoEnv))
		if err == nil || !strings.Contains(err.Error(), "!include is only allowed on the value side") {
			t.Errorf("error = %v", err)
		}
	})
}

// A cassette written as .yaml.zst is zstd on disk and loads back equal.
func TestZstdRoundTrip(t *testing.T) {
	src := mustCassette(t, `kind: host_cassette
app_id: z
episodes:
  - {id: a, match: {handler: h, call: x}, response: {data: {text: "hello"}}, delay: 200ms}
  - {id: b, replay: any, agent: {verb: ask, response: plain text, prompt_tokens: 3}}
`)
	dir := t.TempDir()
	zpath := filepath.Join(dir, "c.yaml.zst")
	if err := src.WriteFile(zpath); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(zpath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Fatalf("%s is not zstd: % x", zpath, raw[:8])
	}
	back, err := Load(zpath, WithGetenv(testkit.NoEnv))
	if err != nil {
		t.Fatal(err)
	}
	opts := cmp.Options{cmpopts.IgnoreUnexported(Episode{}), cmpopts.IgnoreFields(Episode{}, "Line")}
	if d := cmp.Diff(src.Episodes, back.Episodes, opts); d != "" {
		t.Errorf("episodes after round trip (-want +got):\n%s", d)
	}
	plain, err := src.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ypath := filepath.Join(dir, "c.yaml")
	if err := src.WriteFile(ypath); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ypath); !bytes.Equal(b, plain) {
		t.Errorf(".yaml is not the plain encoding")
	}
	dec, err := ReadFile(zpath)
	if err != nil || !bytes.Equal(dec, plain) {
		t.Errorf("decompressed .yaml.zst differs from the plain encoding (err %v)", err)
	}
}

func TestParseDelay(t *testing.T) {
	for in, want := range map[string]time.Duration{"200ms": 200 * time.Millisecond, "2s": 2 * time.Second, "3d": 72 * time.Hour,
		"1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour, "0s": 0} {
		if got, err := ParseDelay(in); err != nil || got != want {
			t.Errorf("ParseDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "xd", "-1s", "5"} {
		if _, err := ParseDelay(in); err == nil {
			t.Errorf("ParseDelay(%q) accepted", in)
		}
	}
}

// The provenance keys (generated_at, match_on; an agent block's turn,
// system_prompt, prompt, input, call_id) are kept for readers: the matcher
// does not read them (each episode's match: decides), and a cassette
// written back holds them as read.
func TestCassetteProvenanceKept(t *testing.T) {
	src := `kind: host_cassette
app_id: app
source_run: runs/7
generated_at: "2026-05-25T00:00:00Z"
match_on: [handler, phase, schema_name]
episodes:
  - id: a
    match: {handler: agent.x, call: c}
    agent:
      verb: decide
      agent: auditor
      turn: 3
      system_prompt: "You audit."
      prompt: "Audit this."
      input: {claim: dinner}
      call_id: 0123456789abcdef
      response: '{"ok":true}'
`
	c := mustCassette(t, src)
	if c.GeneratedAt != "2026-05-25T00:00:00Z" || !cmp.Equal(c.MatchOn, []any{"handler", "phase", "schema_name"}) {
		t.Errorf("header: generated_at %q, match_on %v", c.GeneratedAt, c.MatchOn)
	}
	// match_on does not restrict matching: a call the episode's match:
	// holds is answered though its phase and schema_name are not there.
	if _, ok := c.Pick(NewKey("agent.x", "any", map[string]any{"call": "c"}, nil)); !ok {
		t.Error("match_on restricted the match")
	}
	want := &AgentBlock{Verb: "decide", Agent: "auditor", Turn: 3, SystemPrompt: "You audit.", Prompt: "Audit this.",
		Input: map[string]any{"claim": "dinner"}, CallID: "0123456789abcdef", Response: `{"ok":true}`}
	if d := cmp.Diff(want, c.Episodes[0].Agent); d != "" {
		t.Errorf("agent block (-want +got):\n%s", d)
	}
	out, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back := mustCassette(t, string(out))
	if back.GeneratedAt != c.GeneratedAt || back.SourceRun != "runs/7" || !cmp.Equal(back.MatchOn, c.MatchOn) {
		t.Errorf("header written back: %+v", back)
	}
	if d := cmp.Diff(want, back.Episodes[0].Agent); d != "" {
		t.Errorf("agent block written back (-want +got):\n%s", d)
	}
}
