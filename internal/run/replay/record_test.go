package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// liveGreeter is a deterministic stand-in for a real agent: it greets
// with.name, answers a schema-invalid submission for "Bad" and fails for
// "Err".
func liveGreeter(calls *atomic.Int32) agent.Agent {
	return agent.AgentFunc(func(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		if calls != nil {
			calls.Add(1)
		}
		name, _ := req.With["name"].(string)
		switch name {
		case "Err":
			return nil, agent.Errorf(agent.KindTransportError, "mcp_http agent: http 503: busy")
		case "Bad":
			return &agent.AskResponse{Submission: json.RawMessage(`{"text":"","extra":1}`)}, nil
		}
		return &agent.AskResponse{
			Submission: json.RawMessage(fmt.Sprintf(`{"text":"Hello %s"}`, name)),
			Meta:       map[string]any{"model": "live-1", "usage": map[string]any{"input_tokens": 11, "output_tokens": 4}, "cost_usd": 0.002},
		}, nil
	})
}

var greetRun = []string{"Ada", "Bad", "Err", "Grace"}

// runGreet takes the greetRun turns (greet NAME, back) and returns the
// agent.call.complete/error payloads in order.
func runGreet(t *testing.T, r *rig) []map[string]any {
	t.Helper()
	for _, name := range greetRun {
		out := r.do("greet", map[string]any{"name": name})
		if out.State == "greeting" {
			r.do("back", nil)
		}
	}
	var out []map[string]any
	for _, ev := range r.events(trace.KindAgentCallComplete, trace.KindAgentCallError) {
		p := map[string]any{"kind": ev.Kind}
		if resp, ok := ev.Payload["response"].(map[string]any); ok {
			p["submission"] = resp["submission"]
		}
		if e, ok := ev.Payload["error"]; ok {
			p["error"] = e
		}
		out = append(out, p)
	}
	return out
}

func recordGreet(t *testing.T) (*Recorder, []map[string]any) {
	rec := NewRecorder("greet-test", "0.1.0")
	r := newRig(t, testkit.GreetFiles(), func(r *rig) []host.Option {
		r.reg.Register("agent.g", liveGreeter(nil))
		return nil
	}, func(r *rig) { rec.Install(r.st, r.reg, r.h) })
	return rec, runGreet(t, r)
}

// Recording the same run twice gives the same bytes.
func TestRecordDeterministic(t *testing.T) {
	rec1, _ := recordGreet(t)
	rec2, _ := recordGreet(t)
	b1, err := rec1.Encode()
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := rec2.Encode()
	if !bytes.Equal(b1, b2) {
		t.Fatalf("re-recording differs:\n%s\n---\n%s", b1, b2)
	}
	for _, want := range []string{
		"id: recorded_agent.g_greeting\n", "id: recorded_agent.g_greeting_2\n", "id: recorded_agent.g_greeting_4\n",
		"handler: agent.g\n", "phase: greeting\n", "model: live-1\n", "prompt_tokens: 11\n", "response_tokens: 4\n", "cost_usd: 0.002\n",
		`response: '{"text":"Hello Ada"}'`, `response: '{"text":"","extra":1}'`, `error: 'agent: transport_error: mcp_http agent: http 503: busy'`,
	} {
		if !strings.Contains(string(b1), want) {
			t.Errorf("recording lacks %q:\n%s", want, b1)
		}
	}
	if strings.Contains(string(b1), "data:") {
		t.Errorf("agent episodes must store no data:\n%s", b1)
	}
}

// Replaying a recording hands the host byte-identical submissions and the
// same errors (kinds and texts), including the host's own schema_invalid.
func TestRecordThenReplayIdentical(t *testing.T) {
	rec, live := recordGreet(t)
	c, err := rec.Cassette(cassette.WithGetenv(testkit.NoEnv))
	if err != nil {
		t.Fatal(err)
	}
	replayed := runGreet(t, cassetteRig(t, c))
	if d := cmp.Diff(live, replayed); d != "" {
		t.Errorf("replay differs from the live run (-live +replay):\n%s", d)
	}
	if len(live) != 4 || live[1]["kind"] != trace.KindAgentCallError || !strings.HasPrefix(live[1]["error"].(string), "agent: schema_invalid:") ||
		live[2]["error"] != "agent: transport_error: mcp_http agent: http 503: busy" {
		t.Errorf("live run = %v", live)
	}
	if rest := c.Remaining(); len(rest) != 0 {
		t.Errorf("unplayed: %v", rest)
	}
}

// A non-agent host call is recorded with every argument as a match entry
// and its result; the built-in path of host.agent.* too.
func TestRecordHostCalls(t *testing.T) {
	rec := NewRecorder("host-test", "")
	r := newRig(t, map[string]string{"app.yaml": hostStory}, nil, func(r *rig) {
		n := 0
		r.h.Register("host.git.open_pr", host.HandlerFunc(func(_ context.Context, call *host.Call) (*host.Result, error) {
			n++
			if n == 2 {
				return nil, fmt.Errorf("github unreachable")
			}
			return &host.Result{Data: map[string]any{"url": fmt.Sprintf("https://pr/%d", n)}}, nil
		}))
		rec.Install(r.st, r.reg, r.h)
	})
	r.do("open", map[string]any{"title": "Fix"})
	r.do("open", map[string]any{"title": "Again"})
	b, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `kind: host_cassette
app_id: host-test
record_mode: none
episodes:
  - id: recorded_host.git.open_pr_opening
    match:
      call: pr
      draft: false
      handler: host.git.open_pr
      phase: idle
      title: Fix
    request_hash: 12d98462b905fe52
    response:
      data:
        url: https://pr/1
  - id: recorded_host.git.open_pr_opening_2
    match:
      call: pr
      draft: false
      handler: host.git.open_pr
      phase: opening
      title: Again
    request_hash: e41028a6f5b2d93a
    response:
      infra_error: github unreachable
`
	got := string(b)
	if i := strings.Index(got, "kind:"); i >= 0 {
		got = got[i:]
	}
	if got != want {
		t.Errorf("recording:\n%s\nwant:\n%s", got, want)
	}
	// The hash is the documented one: SHA-256 over the canonical JSON of
	// {args, invoke}, first 16 hex characters.
	sum := sha256.Sum256([]byte(`{"args":{"call":"pr","draft":false,"title":"Fix"},"invoke":"host.git.open_pr"}`))
	if h := hex.EncodeToString(sum[:])[:16]; h != "12d98462b905fe52" {
		t.Errorf("documented hash of the first call = %s, recorded 12d98462b905fe52", h)
	}
}

// In new_episodes mode (file or KITSOKI_CASSETTE_RECORD) a miss asks the
// live agent, answers with its result, and appends the exchange to the file
// under the "appended by" comment; matched calls never reach the live agent.
func TestNewEpisodesAppends(t *testing.T) {
	for _, viaEnv := range []bool{false, true} {
		t.Run(fmt.Sprintf("env=%v", viaEnv), func(t *testing.T) {
			mode := "new_episodes"
			env := map[string]string{}
			if viaEnv {
				mode, env[cassette.EnvRecord] = "none", "new_episodes"
			}
			dir := testkit.Tree(t, map[string]string{
				"c.yaml": "# my notes\nkind: host_cassette\napp_id: greet-test\nrecord_mode: " + mode + "\nepisodes:\n" +
					"  - id: ada # hand-written\n    match: {handler: agent.g, call: compose, name: Ada}\n    agent: {response: '{\"text\":\"Hi Ada (recorded)\"}'}\n",
			})
			path := filepath.Join(dir, "c.yaml")
			c, err := Load(path, cassette.WithGetenv(func(k string) string { return env[k] }))
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			r := newRig(t, testkit.GreetFiles(), func(r *rig) []host.Option {
				r.reg.Register("agent.g", liveGreeter(&calls))
				return []host.Option{host.WithBuiltin(c.ReplayAgents(r.st, r.reg, nil))}
			}, nil)
			if out := r.do("greet", map[string]any{"name": "Ada"}); out.View != "Hi Ada (recorded)" || calls.Load() != 0 {
				t.Fatalf("matched call: view %q, live calls %d", out.View, calls.Load())
			}
			r.do("back", nil)
			if out := r.do("greet", map[string]any{"name": "Grace"}); out.View != "Hello Grace" || calls.Load() != 1 {
				t.Fatalf("missed call: view %q, live calls %d", out.View, calls.Load())
			}
			if err := c.WriteErr(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"# my notes", "# hand-written", "# appended by KITSOKI_CASSETTE_RECORD\n  - id: recorded_agent.g_greeting\n",
				`response: '{"text":"Hello Grace"}'`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("file lacks %q:\n%s", want, b)
				}
			}
			back, err := Load(path, cassette.WithGetenv(testkit.NoEnv))
			if err != nil {
				t.Fatalf("appended file does not load: %v\n%s", err, b)
			}
			if len(back.Episodes) != 2 || back.Episodes[1].Match["handler"] != "agent.g" || back.Episodes[1].Match["phase"] != "greeting" {
				t.Errorf("episodes after append: %+v", back.Episodes)
			}
		})
	}
}

// In none mode a miss never reaches the live agent.
func TestNoneModeNeverCallsLive(t *testing.T) {
	c := mustCassette(t, "kind: host_cassette\nepisodes: []\n")
	var calls atomic.Int32
	r := newRig(t, testkit.GreetFiles(), func(r *rig) []host.Option {
		r.reg.Register("agent.g", liveGreeter(&calls))
		return []host.Option{host.WithBuiltin(c.ReplayAgents(r.st, r.reg, nil))}
	}, nil)
	if out := r.do("greet", map[string]any{"name": "Ada"}); out.State != "lobby" || calls.Load() != 0 {
		t.Errorf("state %q live calls %d", out.State, calls.Load())
	}
}

// A live agent's plain error is recorded as the host classifies it:
// deadline_exceeded once the call's context ended, plugin_crash otherwise.
func TestRecordClassifiesPlainErrors(t *testing.T) {
	rec := NewRecorder("a", "")
	a := rec.Agent("agent.x", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		if req.Verb == "task" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("exit status 2")
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, _ = a.Ask(ctx, agent.NewCall(&agent.AskRequest{Verb: "task", StatePath: "s"}))
	_, _ = a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: "ask", StatePath: "s"}))
	c, err := rec.Cassette(cassette.WithGetenv(testkit.NoEnv))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Episodes[0].Agent.Error; got != "agent: deadline_exceeded: context deadline exceeded" {
		t.Errorf("overrun recorded as %q", got)
	}
	if got := c.Episodes[1].Agent.Error; got != "agent: plugin_crash: exit status 2" {
		t.Errorf("plain error recorded as %q", got)
	}
}

// In new_episodes mode a built-in path call (no agent:) that misses is
// answered by the live built-in agent and appended as a host.agent.decide
// episode with its data, which a later run replays.
func TestNewEpisodesBuiltinPath(t *testing.T) {
	files := testkit.GreetFiles()
	files["app.yaml"] = strings.Replace(testkit.GreetStory, "        agent: agent.g\n", "", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("kind: host_cassette\napp_id: greet-test\nrecord_mode: new_episodes\nepisodes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	run := func(mode string) string {
		c, err := Load(path, cassette.WithGetenv(func(k string) string { return map[string]string{cassette.EnvRecord: mode}[k] }))
		if err != nil {
			t.Fatal(err)
		}
		r := newRig(t, files, func(r *rig) []host.Option {
			if b := c.ReplayAgents(r.st, r.reg, nil); b != nil {
				return []host.Option{host.WithBuiltin(b)}
			}
			return []host.Option{host.WithBuiltin(liveGreeter(&calls))}
		}, func(r *rig) { c.ReplayHandlers(r.h, r.sink, r.st.App.ID) })
		return r.do("greet", map[string]any{"name": "Ada"}).View
	}
	if v := run("new_episodes"); v != "Hello Ada" || calls.Load() != 1 {
		t.Fatalf("recording run: view %q, live calls %d", v, calls.Load())
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"id: recorded_host.agent.decide_greeting\n", "handler: host.agent.decide\n", "submitted:\n          text: Hello Ada\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("cassette lacks %q:\n%s", want, b)
		}
	}
	if v := run("none"); v != "Hello Ada" || calls.Load() != 1 {
		t.Errorf("replay run: view %q, live calls %d", v, calls.Load())
	}
}

// Record then replay hands the host the very bytes the live agent
// submitted, also for submissions the response text rule cannot express
// (scalars, strings that start with { or [, other escapes); those get a
// submission: key, the others are written as the spec's response alone.
func TestRecordReplaySubmissionBytes(t *testing.T) {
	tests := []struct {
		sub      string
		extraKey bool // the recording needs submission:
	}{
		{`{"a":"<b>"}`, false},
		{"{ \"a\" : 1 }\n", false},
		{`[1, 2]`, false},
		{`"plain words"`, false},
		{`"\u003cb\u003e \u0026 é"`, false}, // as Go's encoder writes it
		{``, false},
		{`"<b> & é"`, true}, // as e.g. Python writes it
		{`"[note] hi"`, true},
		{`"{x"`, true},
		{`"  [x]"`, true},
		{`"a\/b"`, true},
		{`null`, true},
		{`true`, true},
		{`3`, true},
		{`-0.5e3`, true},
		{`tru`, true}, // malformed, replayed as malformed
	}
	for _, tt := range tests {
		t.Run(tt.sub, func(t *testing.T) {
			live := agent.AgentFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
				return &agent.AskResponse{Submission: json.RawMessage(tt.sub)}, nil
			})
			req := &agent.AskRequest{Verb: "ask", StatePath: "s"}
			rec := NewRecorder("x", "")
			got, err := rec.Agent("agent.a", live).Ask(context.Background(), agent.NewCall(req))
			if err != nil || string(got.Submission) != tt.sub {
				t.Fatalf("the recorder changed the live answer: %q, %v", got.Submission, err)
			}
			b, err := rec.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), "\n      submission: "); has != tt.extraKey {
				t.Errorf("submission: key written = %v, want %v:\n%s", has, tt.extraKey, b)
			}
			c, err := parseCassette(b, "c.yaml", cassette.WithGetenv(testkit.NoEnv))
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			resp, err := cassette.NewAgent(c.Cassette, "agent.a").Ask(context.Background(), agent.NewCall(req))
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Submission) != tt.sub {
				t.Errorf("live submitted %q, replay %q\n%s", tt.sub, resp.Submission, b)
			}
		})
	}
}
