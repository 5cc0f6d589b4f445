package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// selectingAgent is a replaying agent: it names the episode that answers.
type selectingAgent struct {
	ep      agent.Episode
	ok      bool
	askedID string // the call_id Ask saw
}

func (a *selectingAgent) SelectEpisode(context.Context, *agent.Call) (agent.Episode, bool) {
	return a.ep, a.ok
}

func (a *selectingAgent) Ask(_ context.Context, call *agent.Call) (*agent.AskResponse, error) {
	req := call.Request
	a.askedID = req.CallID
	return &agent.AskResponse{Submission: json.RawMessage(`"ok"`)}, nil
}

func (a *selectingAgent) Close() error { return nil }

// A cassette-backed call takes its call_id from the cassette key and its
// agent.call.start carries episode_id and match_idx; without a selection the
// live call_id stays.
func TestEpisodeSelectorOnCallStart(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, []byte("app: {id: ep-app}\nagent_plugins:\n  agent.r: {plugin: builtin.inprocess}\nroot: s\nstates: {s: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tests := []struct {
		name     string
		ep       agent.Episode
		ok       bool
		wantID   string
		wantEp   string
		wantIdx  int
		liveCall bool
	}{
		{"cassette app id", agent.Episode{ID: "audit_ok", MatchIdx: 0, AppID: "expense-triage"}, true, "498da50176b0b991", "audit_ok", 0, false},
		{"story app id", agent.Episode{ID: "loop", MatchIdx: 2}, true, trace.CallID("ep-app", "loop:2"), "loop", 2, false},
		{"no episode", agent.Episode{ID: "ignored"}, false, "", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &selectingAgent{ep: tt.ep, ok: tt.ok}
			reg := agent.NewRegistry(nil)
			reg.Configure(st.Plugins)
			reg.Register("agent.r", a)
			sink := trace.NewMemSink()
			h := New(st, reg, sink)
			res, err := h.Dispatch(context.Background(), &Call{Namespace: "host.agent.ask", Args: map[string]any{"prompt": "hi"},
				Invoke: &story.Invoke{Name: "host.agent.ask", Agent: "agent.r"}, Turn: 1, State: "s"})
			if err != nil || res.Err != nil {
				t.Fatalf("dispatch: %v %v", err, res.Err)
			}
			var start trace.Event
			for _, ev := range sink.Events() {
				if ev.Kind == trace.KindAgentCallStart {
					start = ev
				}
			}
			want := tt.wantID
			if tt.liveCall {
				want = trace.CallID("ep-app", trace.LiveCallKey(1, "s", start.Seq))
			}
			if start.CallID != want || a.askedID != want || start.EpisodeID != tt.wantEp || start.MatchIdx != tt.wantIdx {
				t.Errorf("start: call_id %q (agent saw %q) episode %q idx %d; want %q, %q, %d",
					start.CallID, a.askedID, start.EpisodeID, start.MatchIdx, want, tt.wantEp, tt.wantIdx)
			}
		})
	}
}
