package toolserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

// toolNameRE is the form mcp-surfaces.md requires of every exposed name.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestValidToolName(t *testing.T) {
	for _, name := range []string{"", "a", "submit_kitsoki", "kitsoki_agent-x_Y9", strings.Repeat("a", 64), strings.Repeat("a", 65), "a b", "a.b", "é", "a/b"} {
		if got, want := validToolName(name), toolNameRE.MatchString(name); got != want {
			t.Errorf("validToolName(%q) = %v, want %v", name, got, want)
		}
	}
}

var verdictSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"enum":["approve","reject"]},"confidence":{"type":"number","minimum":0,"maximum":1}},"required":["decision"],"additionalProperties":false}`)

func testRoot(t testing.TB) string {
	t.Helper()
	abs, err := filepath.Abs("testdata/root")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestSurfacesOverHTTP lists and calls tools on both live surfaces with a
// client of each protocol generation. The outside surfaces' tools are
// internal/serve/mcpserve's.
func TestSurfacesOverHTTP(t *testing.T) {
	root := testRoot(t)
	cases := []struct {
		name    string
		profile Profile
		tools   []string
		call    string
		args    map[string]any
		check   func(t *testing.T, live *fakeLive, text string, sc map[string]any)
	}{
		{
			name:    "kanban-task",
			profile: mustProfile(t, KanbanTask, []Capability{UserQuestion, TaskTitle}, StoryFilesProvider),
			tools: []string{ToolAskUser, ToolCompleteStep, ToolEmitIntent, ToolGetWorld, ToolListStoryFiles,
				ToolReadStoryFile, ToolSetTitle, ToolSubmit},
			call: ToolEmitIntent, args: map[string]any{"intent": "approve", "slots": map[string]any{"approver": "bot"}},
			check: func(t *testing.T, live *fakeLive, _ string, sc map[string]any) {
				if diff := cmp.Diff([]string{"approve"}, live.intents); diff != "" {
					t.Error(diff)
				}
				if live.slots[0]["approver"] != "bot" {
					t.Errorf("slots = %v", live.slots[0])
				}
			},
		},
		{
			name:    "office-task",
			profile: mustProfile(t, OfficeTask, []Capability{ParentQuestion}),
			tools:   []string{ToolAskParent, ToolGetWorld, ToolSubmit},
			call:    ToolGetWorld,
			check: func(t *testing.T, _ *fakeLive, text string, sc map[string]any) {
				want := map[string]any{"run_id": "run-7", "vars": map[string]any{"claim": "taxi", "amount": float64(40)}}
				if diff := cmp.Diff(want, sc); diff != "" {
					t.Error(diff)
				}
				var fromText map[string]any
				if err := json.Unmarshal([]byte(text), &fromText); err != nil || !cmp.Equal(fromText, sc) {
					t.Errorf("text %q is not the structured content", text)
				}
			},
		},
	}
	h := listen(t)
	for _, tc := range cases {
		for _, gen := range generations {
			t.Run(tc.name+"/"+string(gen), func(t *testing.T) {
				live := newFakeLive()
				s := open(t, h, SessionConfig{Profile: tc.profile, RunID: "run-7", StoryDir: root, Live: live})
				c := connect(t, s.URL(), s.Token(), gen)
				if diff := cmp.Diff(tc.tools, mcptest.ToolNames(t, c)); diff != "" {
					t.Fatalf("tools (-want +got):\n%s", diff)
				}
				text, sc, isErr := c.mustCall(t, tc.call, tc.args)
				if isErr {
					t.Fatalf("%s answered a tool error: %s", tc.call, text)
				}
				tc.check(t, live, text, sc)
			})
		}
	}
}

// TestEveryToolDeclaresAllAnnotations lists the full tool set of every
// surface and checks the four hints are present.
func TestEveryToolDeclaresAllAnnotations(t *testing.T) {
	h := listen(t)
	for _, p := range []Profile{
		mustProfile(t, KanbanTask, []Capability{UserQuestion, TaskTitle}, StoryFilesProvider),
		mustProfile(t, OfficeTask, []Capability{ParentQuestion}),
	} {
		s := open(t, h, SessionConfig{Profile: p, StoryDir: testRoot(t), Live: newFakeLive()})
		c := connect(t, s.URL(), s.Token(), modern)
		res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			a := tool.Annotations
			if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Errorf("%s: tool %s lacks an annotation: %+v", p, tool.Name, a)
			}
			if !toolNameRE.MatchString(tool.Name) || !strings.HasSuffix(tool.Name, "_kitsoki") {
				t.Errorf("tool name %q", tool.Name)
			}
		}
	}
}

// TestListChangedOncePerReplacement connects a client of each generation
// to one session and checks that a changed profile sends exactly one
// tools/list_changed, and an unchanged one none.
func TestListChangedOncePerReplacement(t *testing.T) {
	h := listen(t)
	s := open(t, h, SessionConfig{Profile: mustProfile(t, KanbanTask, []Capability{UserQuestion}), Live: newFakeLive()})
	clients := map[generation]*testClient{}
	for _, gen := range generations {
		clients[gen] = connect(t, s.URL(), s.Token(), gen)
	}
	steps := []struct {
		profile Profile
		changed bool
		tools   []string
	}{
		{mustProfile(t, KanbanTask, []Capability{UserQuestion, TaskTitle}), true,
			[]string{ToolAskUser, ToolCompleteStep, ToolEmitIntent, ToolGetWorld, ToolSetTitle, ToolSubmit}},
		{mustProfile(t, KanbanTask, []Capability{TaskTitle, UserQuestion}), false,
			[]string{ToolAskUser, ToolCompleteStep, ToolEmitIntent, ToolGetWorld, ToolSetTitle, ToolSubmit}},
		// autopilot turned on for a child run: the question groups swap
		{mustProfile(t, KanbanTask, []Capability{ParentQuestion}), true,
			[]string{ToolAskParent, ToolCompleteStep, ToolEmitIntent, ToolGetWorld, ToolSubmit}},
		// back to a set whose definitions the server already holds
		{mustProfile(t, KanbanTask, []Capability{UserQuestion}), true,
			[]string{ToolAskUser, ToolCompleteStep, ToolEmitIntent, ToolGetWorld, ToolSubmit}},
		{mustProfile(t, KanbanTask, []Capability{UserQuestion}), false,
			[]string{ToolAskUser, ToolCompleteStep, ToolEmitIntent, ToolGetWorld, ToolSubmit}},
	}
	want := 0
	for i, st := range steps {
		changed, err := s.SetProfile(st.profile)
		if err != nil {
			t.Fatal(err)
		}
		if changed != st.changed {
			t.Errorf("step %d: changed = %v, want %v", i, changed, st.changed)
		}
		if st.changed {
			want++
		}
		for gen, c := range clients {
			if diff := cmp.Diff(st.tools, mcptest.ToolNames(t, c)); diff != "" {
				t.Errorf("step %d, %s client tools (-want +got):\n%s", i, gen, diff)
			}
		}
	}
	for gen, c := range clients {
		t.Run(string(gen), func(t *testing.T) { mcptest.ExpectChanged(t, c.Changed, want) })
	}
}

// TestRefreshNotifiesOnlyOnCatalogChange drives the plugin-tools seam: a
// catalog change (a new version of a tool) is one notification, a refresh
// without change none.
func TestRefreshNotifiesOnlyOnCatalogChange(t *testing.T) {
	version := "1"
	catalog := func(surface Surface) []Tool {
		if surface != KanbanTask {
			return nil
		}
		def := pluginTool("kitsoki_agent_tagger_add_tag")
		return []Tool{{Def: def, Handler: okHandler, Version: version}}
	}
	h := listen(t)
	s := open(t, h, SessionConfig{Profile: mustProfile(t, KanbanTask, nil), Live: newFakeLive(), PluginTools: catalog})
	c := connect(t, s.URL(), s.Token(), modern)
	if !contains(mcptest.ToolNames(t, c), "kitsoki_agent_tagger_add_tag") {
		t.Fatal("plugin tool not listed")
	}
	if s.Refresh() {
		t.Error("Refresh without a catalog change reported a change")
	}
	version = "2"
	if !s.Refresh() {
		t.Error("Refresh after a catalog change reported none")
	}
	mcptest.ExpectChanged(t, c.Changed, 1)
}

// TestStaleClientCallingRemovedToolIsRefused: a client that listed a tool
// before the profile dropped it cannot call it.
func TestStaleClientCallingRemovedToolIsRefused(t *testing.T) {
	h := listen(t)
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			live := newFakeLive()
			s := open(t, h, SessionConfig{Profile: mustProfile(t, KanbanTask, []Capability{UserQuestion}), Live: live})
			c := connect(t, s.URL(), s.Token(), gen)
			if !contains(mcptest.ToolNames(t, c), ToolAskUser) {
				t.Fatal("ask tool not listed")
			}
			if _, err := s.SetProfile(mustProfile(t, KanbanTask, nil)); err != nil {
				t.Fatal(err)
			}
			res, err := c.call(t, ToolAskUser, map[string]any{"question": "may I?"})
			if err == nil && !res.IsError {
				t.Fatalf("stale call succeeded: %s", mcptest.Text(res))
			}
			if len(live.asked) != 0 {
				t.Errorf("the operator was asked: %v", live.asked)
			}
			// The refused call is in the record that becomes the trace.
			evs := s.ToolEvents()
			if len(evs) == 0 || evs[len(evs)-1].Tool != ToolAskUser || evs[len(evs)-1].Outcome != "refused" {
				t.Errorf("tool events = %+v, want the refused %s call last", evs, ToolAskUser)
			}
		})
	}
}

// TestGuardRefusesToolsOutsideTheProfile exercises the handler-side check
// that backs up the server's tool map: a handler reached for a tool the
// profile no longer offers answers a tool error.
func TestGuardRefusesToolsOutsideTheProfile(t *testing.T) {
	s, err := NewSession(SessionConfig{Profile: mustProfile(t, OfficeTask, nil), Live: newFakeLive()})
	if err != nil {
		t.Fatal(err)
	}
	called := false
	h := s.guard(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		called = true
		return nil, nil
	})
	res, err := h(context.Background(), callReq(ToolAskUser, nil))
	if err != nil || !res.IsError || called {
		t.Fatalf("res=%v err=%v called=%v", res, err, called)
	}
	if got := mcptest.Text(res); !strings.Contains(got, "not offered in this session's profile (office-task)") {
		t.Errorf("text = %q", got)
	}
	s.Close()
	res, _ = s.guard(okHandler)(context.Background(), callReq(ToolGetWorld, nil))
	if got := mcptest.Text(res); !res.IsError || !strings.Contains(got, "this agent call has ended") {
		t.Errorf("after close: %q", got)
	}
	evs := s.ToolEvents()
	if len(evs) != 2 || evs[0].Outcome != "refused" || evs[1].Outcome != "refused" {
		t.Errorf("events = %+v", evs)
	}
}

func TestTokens(t *testing.T) {
	h := listen(t)
	a := open(t, h, SessionConfig{Profile: mustProfile(t, OfficeTask, nil), Live: newFakeLive()})
	b := open(t, h, SessionConfig{Profile: mustProfile(t, Configuration, nil)})
	if a.Token() == b.Token() || len(a.Token()) < 40 {
		t.Fatalf("tokens are not fresh: %q %q", a.Token(), b.Token())
	}
	post := func(auth string) int {
		req, _ := http.NewRequest(http.MethodPost, h.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	tests := []struct {
		name string
		auth string
		want int
	}{
		{"missing", "", http.StatusUnauthorized},
		{"wrong", "Bearer " + strings.Repeat("x", 43), http.StatusUnauthorized},
		{"not bearer", "Basic " + a.Token(), http.StatusUnauthorized},
		{"valid", "Bearer " + a.Token(), http.StatusOK},
	}
	for _, tc := range tests {
		if got := post(tc.auth); got != tc.want {
			t.Errorf("%s token: status %d, want %d", tc.name, got, tc.want)
		}
	}
	// Each token reaches its own session.
	ca := connect(t, h.URL(), a.Token(), modern)
	cb := connect(t, h.URL(), b.Token(), modern)
	if !contains(mcptest.ToolNames(t, ca), ToolSubmit) || contains(mcptest.ToolNames(t, cb), ToolSubmit) {
		t.Error("tokens are not routed to their own sessions")
	}
	a.Close()
	if got := post("Bearer " + a.Token()); got != http.StatusUnauthorized {
		t.Errorf("finished call's token: status %d, want 401", got)
	}
	if got := post("Bearer " + b.Token()); got != http.StatusOK {
		t.Errorf("other session's token after close: status %d", got)
	}
}

func TestListenHTTPRefusesNonLoopback(t *testing.T) {
	_, err := ListenHTTP("0.0.0.0:0", nil)
	if err == nil || !strings.Contains(err.Error(), "is not a loopback address") {
		t.Fatalf("err = %v", err)
	}
}

func TestSubmitLoop(t *testing.T) {
	h := listen(t)
	s := open(t, h, SessionConfig{Profile: mustProfile(t, OfficeTask, nil), Live: newFakeLive(), Schema: verdictSchema})
	c := connect(t, s.URL(), s.Token(), modern)

	text, _, isErr := c.mustCall(t, ToolSubmit, map[string]any{"decision": "maybe", "extra": 1})
	if !isErr {
		t.Fatal("invalid submission accepted")
	}
	for _, want := range []string{"submission rejected", "/decision", "/: additional properties 'extra' not allowed", "call submit_kitsoki again"} {
		if !strings.Contains(text, want) {
			t.Errorf("tool error %q lacks %q", text, want)
		}
	}
	if _, ok := s.Submission(); ok {
		t.Fatal("an invalid submission was captured")
	}
	_, sc, isErr := c.mustCall(t, ToolSubmit, map[string]any{"decision": "approve", "confidence": 0.9})
	if isErr || sc["accepted"] != true {
		t.Fatalf("valid submission: %v", sc)
	}
	_, sc, _ = c.mustCall(t, ToolSubmit, map[string]any{"decision": "reject"})
	if sc["accepted"] != false {
		t.Errorf("second submission: %v", sc)
	}
	got, _ := s.Submission()
	if diff := cmp.Diff(`{"confidence":0.9,"decision":"approve"}`, string(got)); diff != "" {
		t.Error(diff)
	}
	var outcomes []string
	for _, ev := range s.ToolEvents() {
		outcomes = append(outcomes, ev.Tool+":"+ev.Outcome)
	}
	if diff := cmp.Diff([]string{"submit_kitsoki:tool_error", "submit_kitsoki:ok", "submit_kitsoki:ok"}, outcomes); diff != "" {
		t.Error(diff)
	}
}

func TestSubmitWithHostValidatorAndWrappedSchema(t *testing.T) {
	h := listen(t)
	validate := func(b []byte) error {
		if string(b) != `["a","b"]` {
			return fmt.Errorf("/: want [a b], got %s", b)
		}
		return nil
	}
	s := open(t, h, SessionConfig{Profile: mustProfile(t, OfficeTask, nil), Live: newFakeLive(),
		Schema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`), Validate: validate})
	c := connect(t, s.URL(), s.Token(), legacy)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == ToolSubmit {
			b, _ := json.Marshal(tool)
			var got struct{ InputSchema any }
			var want any
			_ = json.Unmarshal(b, &got)
			_ = json.Unmarshal([]byte(`{"type":"object","properties":{"value":{"type":"array","items":{"type":"string"}}},"required":["value"],"additionalProperties":false}`), &want)
			if diff := cmp.Diff(want, got.InputSchema); diff != "" {
				t.Errorf("submit tool schema (-want +got):\n%s", diff)
			}
		}
	}
	if text, _, isErr := c.mustCall(t, ToolSubmit, map[string]any{"value": []any{"b"}}); !isErr || !strings.Contains(text, "want [a b]") {
		t.Errorf("host validator not used: %q", text)
	}
	c.mustCall(t, ToolSubmit, map[string]any{"value": []any{"a", "b"}})
	if got, _ := s.Submission(); string(got) != `["a","b"]` {
		t.Errorf("submission = %s", got)
	}
}

func TestLiveTools(t *testing.T) {
	h := listen(t)
	live := newFakeLive()
	s := open(t, h, SessionConfig{Profile: mustProfile(t, KanbanTask, []Capability{UserQuestion, TaskTitle}), Live: live})
	c := connect(t, s.URL(), s.Token(), legacy)
	if _, sc, _ := c.mustCall(t, ToolAskUser, map[string]any{"question": "ship it?"}); sc["answer"] != "operator says yes" {
		t.Errorf("answer = %v", sc)
	}
	c.mustCall(t, ToolSetTitle, map[string]any{"title": "  Taxi claim  "})
	c.mustCall(t, ToolCompleteStep, map[string]any{"summary": "audited"})
	if text, _, isErr := c.mustCall(t, ToolSetTitle, map[string]any{"title": "two\nlines"}); !isErr || !strings.Contains(text, "one line") {
		t.Errorf("multi-line title: %q", text)
	}
	if text, _, isErr := c.mustCall(t, ToolAskUser, map[string]any{"question": " "}); !isErr || !strings.Contains(text, "non-empty question") {
		t.Errorf("empty question: %q", text)
	}
	if diff := cmp.Diff([]string{"ship it?"}, live.asked); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]string{"Taxi claim"}, live.titles); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]string{"audited"}, live.steps); diff != "" {
		t.Error(diff)
	}
}

func TestDetachedCallRefusesRunActions(t *testing.T) {
	h := listen(t)
	s := open(t, h, SessionConfig{Profile: mustProfile(t, KanbanTask, nil), Live: Detached(map[string]any{"x": 1})})
	c := connect(t, s.URL(), s.Token(), modern)
	text, _, isErr := c.mustCall(t, ToolEmitIntent, map[string]any{"intent": "go"})
	if !isErr || !strings.Contains(text, "not attached to a run") {
		t.Errorf("emit on a detached call: %q", text)
	}
	if _, sc, _ := c.mustCall(t, ToolGetWorld, nil); !cmp.Equal(sc["vars"], map[string]any{"x": float64(1)}) {
		t.Errorf("world = %v", sc)
	}
}

func TestStoryFilesProvider(t *testing.T) {
	root := testRoot(t)
	h := listen(t)
	s := open(t, h, SessionConfig{Profile: mustProfile(t, OfficeTask, nil, StoryFilesProvider), Live: newFakeLive(), StoryDir: root})
	c := connect(t, s.URL(), s.Token(), modern)
	_, sc, _ := c.mustCall(t, ToolListStoryFiles, nil)
	if diff := cmp.Diff([]any{"good/app.yaml", "prompts/audit.md", "schemas/verdict.json"}, sc["files"]); diff != "" {
		t.Error(diff)
	}
	text, _, isErr := c.mustCall(t, ToolReadStoryFile, map[string]any{"path": "prompts/audit.md"})
	if isErr || text != "Audit the claim {{ args.claim }}.\n" {
		t.Errorf("read = %q", text)
	}
	if text, _, isErr := c.mustCall(t, ToolReadStoryFile, map[string]any{"path": "../http_test.go"}); !isErr || !strings.Contains(text, "outside") {
		t.Errorf("escape: %q", text)
	}
}

func TestSessionNeedsLiveCallOnLiveSurface(t *testing.T) {
	_, err := NewSession(SessionConfig{Profile: mustProfile(t, OfficeTask, nil)})
	if err == nil || !strings.Contains(err.Error(), "surface office-task needs a live call") {
		t.Errorf("err = %v", err)
	}
	s, err := NewSession(SessionConfig{Profile: mustProfile(t, OfficeTask, nil), Live: newFakeLive()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetProfile(mustProfile(t, Configuration, nil)); err == nil || !strings.Contains(err.Error(), "cannot move from surface office-task to configuration") {
		t.Errorf("surface move: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
