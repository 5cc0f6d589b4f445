package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

func loadTestdata(t *testing.T, name string) *Cassette {
	t.Helper()
	c, err := Load(filepath.Join("testdata", name), cassette.WithGetenv(testkit.NoEnv))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refOf is the transcript_ref of an event's payload, as read back.
func refOf(t *testing.T, payload map[string]any) map[string]any {
	t.Helper()
	ref, ok := payload["transcript_ref"].(map[string]any)
	if !ok {
		t.Fatalf("no transcript_ref in %v", payload)
	}
	return ref
}

// A host.agent.* episode's recorded transcript is written beside the trace
// as it was recorded (string events byte for byte, a mapping event as
// compact JSON in its written order) with its timings, and the closing
// event, complete or error, points at it.
func TestCassetteTranscriptReplay(t *testing.T) {
	c := loadTestdata(t, "transcript.cassette.yaml")
	r := cassetteRig(t, c)
	if out := r.do("greet", map[string]any{"name": "Ada"}); out.View != "Hi from data" {
		t.Fatalf("view %q", out.View)
	}
	r.do("back", nil)
	r.do("greet", map[string]any{"name": "Ada"})

	hi, down := trace.CallID("cassette-app", "hi:0"), trace.CallID("cassette-app", "down:0")
	want := []trace.Sidecar{
		{Path: "transcripts/" + hi + ".jsonl", Data: []byte(`{"type":"system","subtype":"init","session_id":"s-1"}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"b":1,"a":2.50}}]}}
{"_kitsoki":"nudge","outer_iter":1,"text":"call submit"}
{"type":"result","subtype":"success","result":"hi"}
`)},
		{Path: "transcripts/" + hi + ".timings", Data: []byte("0 0\n1 120\n2 130\n3 400\n")},
		{Path: "transcripts/" + down + ".jsonl", Data: []byte(`{"type":"result","subtype":"error_max_turns"}` + "\n")},
	}
	if d := cmp.Diff(want, r.sink.Sidecars()); d != "" {
		t.Errorf("sidecars (-want +got):\n%s", d)
	}
	complete := r.events(trace.KindAgentCallComplete)
	failed := r.events(trace.KindAgentCallError)
	if len(complete) != 1 || len(failed) != 1 {
		t.Fatalf("%d complete, %d error events", len(complete), len(failed))
	}
	wantRef := map[string]any{"format": "claude-stream-json", "path": "transcripts/" + hi + ".jsonl", "events": json.Number("4"), "schema_version": json.Number("1")}
	if d := cmp.Diff(wantRef, refOf(t, complete[0].Payload)); d != "" {
		t.Errorf("agent.call.complete transcript_ref (-want +got):\n%s", d)
	}
	wantRef = map[string]any{"format": "claude-stream-json", "path": "transcripts/" + down + ".jsonl", "events": json.Number("1"), "schema_version": json.Number("1")}
	if d := cmp.Diff(wantRef, refOf(t, failed[0].Payload)); d != "" {
		t.Errorf("agent.call.error transcript_ref (-want +got):\n%s", d)
	}
}

// An episode of an agent alias (the agent role) hands its transcript to the
// host with the answer; the host writes the sidecar and points
// agent.call.complete at it.
func TestCassetteTranscriptAgentRole(t *testing.T) {
	c := loadTestdata(t, "transcript-agent.cassette.yaml")
	r := cassetteRig(t, c)
	if out := r.do("greet", map[string]any{"name": "Ada"}); out.View != "from agent role" {
		t.Fatalf("view %q", out.View)
	}
	id := trace.CallID("cassette-app", "alias:0")
	want := []trace.Sidecar{
		{Path: "transcripts/" + id + ".jsonl", Data: []byte(`{"role":"user","content":"Greet Ada."}
{"role":"assistant","content":"{\"text\":\"from agent role\"}"}
`)},
		{Path: "transcripts/" + id + ".timings", Data: []byte("0 0\n1 75\n")},
	}
	if d := cmp.Diff(want, r.sink.Sidecars()); d != "" {
		t.Errorf("sidecars (-want +got):\n%s", d)
	}
	evs := r.events(trace.KindAgentCallComplete)
	if len(evs) != 1 {
		t.Fatalf("%d agent.call.complete events", len(evs))
	}
	wantRef := map[string]any{"format": "openai-chat", "path": "transcripts/" + id + ".jsonl", "events": json.Number("2"), "schema_version": json.Number("1")}
	if d := cmp.Diff(wantRef, refOf(t, evs[0].Payload)); d != "" {
		t.Errorf("transcript_ref (-want +got):\n%s", d)
	}
}

// A trace with transcript_refs turns back into a cassette whose episodes
// carry the transcripts, read from the sidecars; replaying that cassette
// writes the same sidecars again.
func TestFromTraceFoldsTranscripts(t *testing.T) {
	c := loadTestdata(t, "transcript.cassette.yaml")
	r := cassetteRig(t, c)
	r.do("greet", map[string]any{"name": "Ada"})
	dir := t.TempDir()
	first := r.sink.Sidecars()
	for _, sc := range first {
		p := filepath.Join(dir, filepath.FromSlash(sc.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, sc.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	back, err := FromTraceWith(r.sink.Events(), "", func(ref *trace.TranscriptRef) (*trace.Transcript, error) {
		return trace.ReadTranscript(dir, ref)
	})
	if err != nil {
		t.Fatal(err)
	}
	var got *cassette.Transcript
	for _, ep := range back.Episodes {
		if ep.Agent != nil && ep.Agent.Transcript != nil {
			got = ep.Agent.Transcript
		}
	}
	want := c.Episodes[0].Agent.Transcript
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("folded transcript (-want +got):\n%s", d)
	}
}

// transcriptGreeter answers like a transport that captures its own event
// stream: a transcript with every answer; "Broken" gets one whose event
// is not JSON.
func transcriptGreeter() agent.Agent {
	return agent.AgentFunc(func(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
		name, _ := call.Request.With["name"].(string)
		ev := fmt.Sprintf(`{"type":"assistant","text":"Hello %s","n":1.0}`, name)
		if name == "Broken" {
			ev = `{"type":`
		}
		return &agent.AskResponse{
			Submission: json.RawMessage(fmt.Sprintf(`{"text":"Hello %s"}`, name)),
			Transcript: &trace.Transcript{Format: "test-stream", Events: []json.RawMessage{json.RawMessage(`{"type":"init"}`), json.RawMessage(ev)}, Timings: []int64{0, 9}},
		}, nil
	})
}

// A live call's transcript goes beside the trace; recorded, the cassette
// keeps it, and replaying the cassette writes byte-identical sidecars.
func TestRecordThenReplayTranscript(t *testing.T) {
	rec := NewRecorder("greet-test", "0.1.0")
	live := newRig(t, testkit.GreetFiles(), func(r *rig) []host.Option {
		r.reg.Register("agent.g", transcriptGreeter())
		return nil
	}, func(r *rig) { rec.Install(r.st, r.reg, r.h) })
	live.do("greet", map[string]any{"name": "Ada"})
	liveFiles := live.sink.Sidecars()
	if len(liveFiles) != 2 {
		t.Fatalf("live sidecars %v, want .jsonl and .timings", liveFiles)
	}
	c, err := rec.Cassette(cassette.WithGetenv(testkit.NoEnv))
	if err != nil {
		t.Fatal(err)
	}
	replayed := cassetteRig(t, c)
	replayed.do("greet", map[string]any{"name": "Ada"})
	// The call_ids differ (live: turn, state and seq; replay: episode and
	// match index), so compare the files' contents.
	got := replayed.sink.Sidecars()
	if len(got) != len(liveFiles) {
		t.Fatalf("replayed sidecars %v", got)
	}
	for i := range got {
		if !bytes.Equal(got[i].Data, liveFiles[i].Data) {
			t.Errorf("%s differs from the live %s:\n%s\n---\n%s", got[i].Path, liveFiles[i].Path, got[i].Data, liveFiles[i].Data)
		}
	}
}

// A transport's transcript that cannot be a sidecar fails the call as
// plugin_crash, with the reason, and the story handles it like any agent
// failure.
func TestBadTranscriptFailsTheCall(t *testing.T) {
	r := newRig(t, testkit.GreetFiles(), func(r *rig) []host.Option {
		r.reg.Register("agent.g", transcriptGreeter())
		return nil
	}, nil)
	out := r.do("greet", map[string]any{"name": "Broken"})
	want := "agent: plugin_crash: the agent's transcript cannot be kept: bad agent-action transcript: event 1 is not one line of JSON"
	if out.State != "lobby" || r.sess.World()["last_error"] != want {
		t.Errorf("state %q last_error %v\nwant lobby, %s", out.State, r.sess.World()["last_error"], want)
	}
	if n := len(r.sink.Sidecars()); n != 0 {
		t.Errorf("%d sidecars written for a bad transcript", n)
	}
}
