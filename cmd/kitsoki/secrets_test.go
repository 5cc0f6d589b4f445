package main

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// leakySecret is the ${LEAKY_TOKEN} value the leaky story's plugins leak.
const leakySecret = "sk-live-0123456789abcdef"

// encodedSecret is a ${LEAKY_TOKEN} value holding every character that
// JSON, YAML and HTML encoders rewrite (issue 28: such a secret was
// written JSON- or HTML-escaped, unmasked).
const encodedSecret = `sk-"live\<0123>&é-abcdef`

// leakyIntents drive the leaky story through each of its plugins once.
const leakyIntents = "meta,answer,rpcerr,badschema,noisy,crash,done"

// leakedForms are the texts a secret takes in an artifact: itself and
// each of its encodings, worked out here with the encoders themselves.
func leakedForms(t *testing.T, secret string) []string {
	t.Helper()
	forms := []string{secret}
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	inner := func(s string, escapeHTML bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		j := strings.TrimSuffix(b.String(), "\n")
		return j[1 : len(j)-1]
	}
	for _, escapeHTML := range []bool{true, false} {
		once := inner(secret, escapeHTML)
		add(once)
		add(inner(once, escapeHTML)) // a JSON text inside a JSON string, a quoted log value
	}
	add(html.EscapeString(secret))
	y, err := yaml.Marshal(secret)
	if err != nil {
		t.Fatal(err)
	}
	add(strings.Trim(strings.TrimSpace(string(y)), `"'`))
	return forms
}

// copyFixture copies testdata/<name> (scripts keep their execute bit) to a
// temporary directory.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// artifact is one thing a run wrote, with texts it must contain to show
// the leak really took that path (and was masked).
type artifact struct {
	name, text string
	want       []string
}

func readArtifact(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("artifact not written: %v", err)
	}
	return string(b)
}

// TestSecretsStayOutOfEveryArtifact: the leaky story's plugins put their
// ${VAR} secret in their meta (model and a free field), in a schema-valid
// submission, in a JSON-RPC error message, in a submission that fails its
// schema, and on stderr and in a sub-event. Every file kitsoki writes from
// such a run (trace, --record cassette, trace to-cassette, a new_episodes
// cassette it appended to, an eval report and eval cassette) and
// everything it prints shows REDACTED where the secret was.
func TestSecretsStayOutOfEveryArtifact(t *testing.T) {
	for name, secret := range map[string]string{"plain": leakySecret, "encoded": encodedSecret} {
		t.Run(name, func(t *testing.T) { secretsStayOut(t, secret) })
	}
}

func secretsStayOut(t *testing.T, secret string) {
	t.Setenv("LEAKY_TOKEN", secret)
	dir := copyFixture(t, "leaky")
	app := filepath.Join(dir, "app.yaml")
	var arts []artifact

	// 1. A recorded run.
	tr, rec := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "rec.yaml")
	code, out, errs := runCLI(t, "", "--log-level", "debug", "run", app, "--trace", tr, "--record", rec, "--intents", leakyIntents)
	if code != exitOK {
		t.Fatalf("run --record: exit %d\n%s", code, errs)
	}
	arts = append(arts,
		artifact{"run stdout", out, []string{"leak: the key is REDACTED"}},
		artifact{"run stderr (logs)", errs, []string{`line="my token is REDACTED"`}},
		artifact{"trace", readArtifact(t, tr), []string{
			`"meta":{"model":"REDACTED","note":"served with REDACTED"}`,
			`"submission":{"text":"the key is REDACTED"}`,
			`"error":"agent: plugin_crash: subprocess agent: rpc error -32000: token REDACTED was refused","error_kind":"plugin_crash"`,
			`"error_kind":"schema_invalid"`,
			`"kind":"agent.noisy.note","state_path":"s","call_id":`, `"payload":{"token":"REDACTED"}`,
			`stderr tail: \"{\\\"level\\\":\\\"fatal\\\",\\\"token\\\":\\\"REDACTED\\\"}`,
		}},
		artifact{"--record cassette", readArtifact(t, rec), []string{
			"model: REDACTED",
			`response: '{"text":"the key is REDACTED"}'`,
			"error: 'agent: plugin_crash: subprocess agent: rpc error -32000: token REDACTED was refused'",
			`response: '{"decision":"REDACTED"}'`,
		}})

	// 2. trace to-cassette, to stdout and to a file.
	code, out, errs = runCLI(t, "", "trace", "to-cassette", tr)
	if code != exitOK {
		t.Fatalf("trace to-cassette: exit %d\n%s", code, errs)
	}
	arts = append(arts, artifact{"trace to-cassette stdout", out, []string{"note: served with REDACTED"}})
	tc := filepath.Join(dir, "tc.yaml")
	if code, _, errs = runCLI(t, "", "trace", "to-cassette", tr, "-o", tc); code != exitOK {
		t.Fatalf("trace to-cassette -o: exit %d\n%s", code, errs)
	}
	arts = append(arts, artifact{"trace to-cassette -o", readArtifact(t, tc), []string{"note: served with REDACTED"}})

	// A trace written by another program, secrets and all: --story masks
	// that story's secrets in the cassette.
	foreign := filepath.Join(dir, "foreign.jsonl")
	inJSON, _ := json.Marshal(secret)
	if err := os.WriteFile(foreign, bytes.ReplaceAll([]byte(readArtifact(t, tr)), []byte("REDACTED"), inJSON[1:len(inJSON)-1]), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "", "trace", "to-cassette", foreign, "--story", app)
	if code != exitOK {
		t.Fatalf("trace to-cassette --story: exit %d\n%s", code, errs)
	}
	arts = append(arts, artifact{"trace to-cassette --story (foreign trace)", out, []string{"note: served with REDACTED", "app_id: leaky"}})

	// 3. A replay that records its misses into a new_episodes cassette.
	nep := filepath.Join(dir, "nep.yaml")
	if err := os.WriteFile(nep, []byte("kind: host_cassette\nrecord_mode: new_episodes\nepisodes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr2 := filepath.Join(dir, "t2.jsonl")
	code, out, errs = runCLI(t, "", "run", app, "--trace", tr2, "--cassette", nep, "--intents", leakyIntents)
	if code != exitOK {
		t.Fatalf("run --cassette (new_episodes): exit %d\n%s", code, errs)
	}
	arts = append(arts,
		artifact{"new_episodes run stdout", out, []string{"leak: the key is REDACTED"}},
		artifact{"new_episodes run stderr", errs, nil},
		artifact{"new_episodes trace", readArtifact(t, tr2), []string{"token REDACTED was refused"}},
		artifact{"appended cassette", readArtifact(t, nep), []string{
			"appended by KITSOKI_CASSETTE_RECORD", "model: REDACTED", "token REDACTED was refused", `{"decision":"REDACTED"}`,
		}})

	// 4. A live eval of the answer call site, recorded.
	reports, ecas := filepath.Join(dir, "reports"), filepath.Join(dir, "ecas.yaml")
	code, out, errs = runCLI(t, "", "eval", "run", filepath.Join(dir, "evals", "answer.yaml"), "--live", "--json",
		"--record", ecas, "--report-dir", reports)
	// No candidate passes the bar; which exit code says so is not this
	// test's business, only that the run wrote its report.
	if _, err := os.Stat(filepath.Join(reports, "latest.json")); err != nil {
		t.Fatalf("eval run --live: exit %d, no report (%v)\n%s", code, err, errs)
	}
	arts = append(arts,
		artifact{"eval stdout (report)", out, []string{`"text": "the key is REDACTED"`}},
		artifact{"eval stderr (progress)", errs, []string{"got the key is REDACTED want hello"}},
		artifact{"eval report latest.json", readArtifact(t, filepath.Join(reports, "latest.json")), []string{
			`"reason": "field \"text\" got the key is REDACTED want hello"`, `"text": "the key is REDACTED"`,
		}},
		artifact{"eval cassette", readArtifact(t, ecas), []string{`response: '{"text":"the key is REDACTED"}'`}})

	forms := leakedForms(t, secret)
	for _, a := range arts {
		for _, f := range forms {
			if strings.Contains(a.text, f) {
				t.Errorf("%s shows the secret as %q:\n%s", a.name, f, a.text)
			}
		}
		for _, w := range a.want {
			if !strings.Contains(a.text, w) {
				t.Errorf("%s lacks %q (the leak did not take this path?):\n%s", a.name, w, a.text)
			}
		}
	}
}

// TestShortEnvValueKeepsErrorKind: JUDGE_MODE=crash is a short resolved
// ${VAR} value; it is masked only where a whole string equals it, so the
// crashing plugin's agent.call.error keeps error_kind plugin_crash and an
// intact message in the trace, the cassette and on stderr, and the line
// matches the trace schema.
func TestShortEnvValueKeepsErrorKind(t *testing.T) {
	t.Setenv("JUDGE_MODE", "crash")
	dir := t.TempDir()
	write := fileWriter(t, dir)
	write("judge.sh", "#!/bin/sh\nread line\necho \"judge mode $JUDGE_MODE: crashing on purpose\" >&2\nexit 3\n", 0o755)
	write("app.yaml", `app: {id: judge}
agent_plugins:
  agent.judge:
    plugin: subprocess
    command: ./judge.sh
    env: {JUDGE_MODE: "${JUDGE_MODE}"}
world:
  mode: {type: string, default: ""}
intents: {go: {}}
root: s
states:
  s:
    on:
      go:
        - target: done
          effects:
            - invoke: host.agent.ask
              agent: agent.judge
              with: {prompt: "judge in crash mode"}
  done: {terminal: true}
`, 0o644)
	tr, rec := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "rec.yaml")
	code, _, errs := runCLI(t, "", "run", filepath.Join(dir, "app.yaml"), "--trace", tr, "--record", rec, "--intents", "go")
	if code != exitAgent {
		t.Fatalf("exit %d, want %d\n%s", code, exitAgent, errs)
	}
	// The cause's wording depends on whether kitsoki saw the pipe close or
	// the exit first; the kind, the exit status and the stderr tail do not.
	const (
		wantPrefix = "agent: plugin_crash: subprocess agent: "
		wantTail   = `; plugin exit status 3; stderr tail: "judge mode crash: crashing on purpose\n"`
	)
	intact := func(msg string) bool { return strings.HasPrefix(msg, wantPrefix) && strings.HasSuffix(msg, wantTail) }
	var printed string
	for _, l := range strings.Split(errs, "\n") {
		if i := strings.Index(l, wantPrefix); i >= 0 && strings.HasPrefix(l, "error: ") {
			printed = l[i:]
		}
	}
	if !intact(printed) {
		t.Errorf("stderr lacks the intact error %q...%q:\n%s", wantPrefix, wantTail, errs)
	}

	evs, err := trace.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	for _, ev := range evs {
		switch ev.Kind {
		case trace.KindAgentCallError:
			got = ev.Payload
		case trace.KindAgentCallStart:
			if ev.Payload["prompt"] != "judge in crash mode" {
				t.Errorf("the prompt was rewritten: %q", ev.Payload["prompt"])
			}
		}
	}
	if got == nil {
		t.Fatalf("no agent.call.error in the trace")
	}
	if msg, _ := got["error"].(string); got["error_kind"] != "plugin_crash" || !intact(msg) {
		t.Errorf("agent.call.error payload: error_kind %q, error %q; want plugin_crash, %q...%q", got["error_kind"], got["error"], wantPrefix, wantTail)
	}
	checkTraceSchema(t, tr)

	cas := readArtifact(t, rec)
	if !strings.Contains(cas, "error: 'agent: plugin_crash: subprocess agent: ") || !strings.Contains(cas, `judge mode crash: crashing on purpose\n"'`) ||
		strings.Contains(cas, "REDACTED") {
		t.Errorf("the recorded error is not intact:\n%s", cas)
	}
}

// TestTraceSchemaRequiresErrorKind: the schema refuses an agent.call.error
// line without error_kind, or with a kind that is not one of the six.
func TestTraceSchemaRequiresErrorKind(t *testing.T) {
	sch := traceSchema(t)
	line := func(payload map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"turn": 1, "seq": 2, "ts": "2025-06-01T10:00:01Z", "kind": "agent.call.error",
			"state_path": "s", "call_id": "335599da002646d7", "payload": payload})
		return b
	}
	for _, tc := range []struct {
		name    string
		payload map[string]any
		ok      bool
	}{
		{"complete", map[string]any{"verb": "ask", "duration_ms": 3, "error": "agent: plugin_crash: boom", "error_kind": "plugin_crash"}, true},
		{"no error_kind", map[string]any{"verb": "ask", "duration_ms": 3, "error": "agent: plugin_crash: boom"}, false},
		{"masked kind", map[string]any{"verb": "ask", "duration_ms": 3, "error": "agent: plugin_REDACTED: boom", "error_kind": "plugin_REDACTED"}, false},
	} {
		_, err := sch.ValidateJSON(line(tc.payload))
		if (err == nil) != tc.ok {
			t.Errorf("%s: valid=%v, want %v (%v)", tc.name, err == nil, tc.ok, err)
		}
	}
}

// TestErrorARunEndsWithIsMasked: the error a run ends with is printed by
// main, outside the run's masked writers; it is masked too.
func TestErrorARunEndsWithIsMasked(t *testing.T) {
	t.Setenv("LEAKY_TOKEN", leakySecret)
	dir := copyFixture(t, "leaky")
	code, _, errs := runCLI(t, "", "run", filepath.Join(dir, "app.yaml"), "--trace", filepath.Join(dir, "t.jsonl"),
		"--root", leakySecret, "--intents", "done")
	if code != exitFailure || strings.Contains(errs, leakySecret) || !strings.Contains(errs, `root state "REDACTED" does not exist`) {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

// TestFlowReportsMaskSecrets: a flow whose cassette (written by hand, secret
// and all) answers with the secret fails on its view; the failure line on
// stdout, the --json report and the --trace-out trace show REDACTED.
func TestFlowReportsMaskSecrets(t *testing.T) {
	t.Setenv("LEAKY_TOKEN", leakySecret)
	dir := copyFixture(t, "leaky")
	write := fileWriter(t, dir)
	write("leak-cassette.yaml", `kind: host_cassette
episodes:
  - id: a
    match: {handler: agent.answer}
    agent:
      verb: decide
      response: '{"text":"the key is `+leakySecret+`"}'
      transcript: {format: test, events: ['{"type":"tool_result","content":"key `+leakySecret+`"}']}
`, 0o644)
	if err := os.MkdirAll(filepath.Join(dir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("flows/leak.yaml", `test_kind: flow
app: ../app.yaml
host_cassette: ../leak-cassette.yaml
turns:
  - intent: {name: answer}
    expect_view_matches: "^nothing$"
`, 0o644)
	rep, tr := filepath.Join(dir, "rep.json"), filepath.Join(dir, "flow.jsonl")
	code, out, errs := runCLI(t, "", "test", "flows", filepath.Join(dir, "app.yaml"), "--json", rep, "--trace-out", tr)
	if code != exitFlowsFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFlowsFailed, out, errs)
	}
	for _, a := range []artifact{
		{"flows stdout", out, []string{`view does not match /^nothing$/: "leak: the key is REDACTED"`}},
		{"flows stderr", errs, nil},
		{"--json report", readArtifact(t, rep), []string{`the key is REDACTED`}},
		{"--trace-out", readArtifact(t, tr), []string{`"the key is REDACTED"`, `"transcript_ref":{"events":1,"format":"test","path":"transcripts/`}},
		{"--trace-out transcript sidecar", readSidecars(t, filepath.Join(dir, "transcripts")), []string{`{"content":"key REDACTED","type":"tool_result"}`}},
	} {
		if strings.Contains(a.text, leakySecret) {
			t.Errorf("%s shows the secret:\n%s", a.name, a.text)
		}
		for _, w := range a.want {
			if !strings.Contains(a.text, w) {
				t.Errorf("%s lacks %q:\n%s", a.name, w, a.text)
			}
		}
	}
}

// readSidecars is every .jsonl file of a transcripts/ directory, joined.
func readSidecars(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcript sidecars in %s (%v)", dir, err)
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString(readArtifact(t, f))
	}
	return b.String()
}
