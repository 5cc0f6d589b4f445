package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

// mcpServer runs `kitsoki mcp serve` with args until the test ends and
// returns its URL (the token is "tok").
func mcpServer(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer pw.Close()
		runContext(ctx, append([]string{"mcp", "serve", "--token", "tok", "--http", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, pw)
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	urlRE := regexp.MustCompile(`serving the \w+ surface at (\S+)`)
	found := make(chan string, 1)
	go func() {
		b := make([]byte, 4096)
		var seen string
		for {
			n, err := pr.Read(b)
			seen += string(b[:n])
			if m := urlRE.FindStringSubmatch(seen); m != nil {
				found <- m[1]
				io.Copy(io.Discard, pr)
				return
			}
			if err != nil {
				close(found)
				return
			}
		}
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatal("kitsoki mcp serve ended before serving")
		}
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("kitsoki mcp serve did not announce its URL")
	}
	return ""
}

// call calls a tool and returns its result.
func call(t *testing.T, c *mcptest.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// frameOf decodes a tool result's frame; the call must not have failed.
func frameOf(t *testing.T, tool string, res *mcp.CallToolResult) driver.Frame {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s failed: %s", tool, mcptest.Text(res))
	}
	var f driver.Frame
	if err := json.Unmarshal([]byte(mcptest.Text(res)), &f); err != nil {
		t.Fatalf("%s: not a frame: %v\n%s", tool, err, mcptest.Text(res))
	}
	return f
}

// The MCP session tools of the external surface, driven by mcp-go's
// client over Streamable HTTP (issue 32): new, submit, continue, inspect,
// render, trace, list, fork, delete; every call that reached the live
// session is in its trace; a session the server holds is busy for another
// process; the configuration surface has none of them.
func TestMCPSessionTools(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sessions := t.TempDir()
	url := mcpServer(t, "--surface", "external", "--root", repo, "--sessions-dir", sessions)
	c := mcptest.Connect(t, url, "tok", mcptest.Modern, false)
	names := strings.Join(mcptest.ToolNames(t, c), ",")
	for _, tool := range []string{"session_new_kitsoki", "session_submit_kitsoki", "session_continue_kitsoki", "session_inspect_kitsoki",
		"session_render_kitsoki", "session_trace_kitsoki", "session_list_kitsoki", "session_fork_kitsoki", "session_delete_kitsoki"} {
		if !strings.Contains(names, tool) {
			t.Errorf("the external surface lacks %s: %s", tool, names)
		}
	}

	f := frameOf(t, "new", call(t, c, "session_new_kitsoki", map[string]any{"story": "stories/hello", "key": "mcp:thread-1"}))
	if f.State != "lobby" || f.Session.Key != "mcp:thread-1" || f.Status.Name != "ok" || len(f.AllowedIntents) == 0 {
		t.Fatalf("new: %+v", f)
	}
	f = frameOf(t, "submit line", call(t, c, "session_submit_kitsoki", map[string]any{"session": "mcp:thread-1", "line": "greet name=Ada style=formal"}))
	if f.State != "greeted" || f.Session.Turn != 1 || !strings.Contains(strings.Join(f.Says, "\n"), "Good day, Ada") || len(f.Events) == 0 {
		t.Errorf("submit: state %q turn %d says %q", f.State, f.Session.Turn, f.Says)
	}
	f = frameOf(t, "submit intent", call(t, c, "session_submit_kitsoki", map[string]any{"session": "mcp:thread-1", "intent": "bye", "slots": map[string]any{}}))
	if !f.Done || f.State != "farewell" {
		t.Errorf("submit bye: done %v state %q", f.Done, f.State)
	}
	if res := call(t, c, "session_submit_kitsoki", map[string]any{"session": "mcp:thread-1", "raw": "bye", "text": "bye"}); !res.IsError ||
		!strings.Contains(mcptest.Text(res), "give one input") {
		t.Errorf("two inputs: %+v", res)
	}
	f = frameOf(t, "inspect", call(t, c, "session_inspect_kitsoki", map[string]any{"session": "mcp:thread-1"}))
	if f.Outcome != "status" || f.State != "farewell" || f.World["greetings"] != float64(1) {
		t.Errorf("inspect: %+v", f)
	}
	if text := mcptest.Text(call(t, c, "session_render_kitsoki", map[string]any{"session": "mcp:thread-1"})); !strings.Contains(text, "Bye! 1 greeting(s) today.") ||
		!strings.Contains(text, "[farewell]") {
		t.Errorf("render:\n%s", text)
	}
	tr := mcptest.Text(call(t, c, "session_trace_kitsoki", map[string]any{"session": "mcp:thread-1"}))
	for _, tool := range []string{"session_new_kitsoki", "session_submit_kitsoki", "session_inspect_kitsoki", "session_render_kitsoki"} {
		if !strings.Contains(tr, `"kind":"`+driver.KindAPICall+`"`) || !strings.Contains(tr, `"tool":"`+tool+`"`) {
			t.Errorf("the trace does not record %s:\n%s", tool, tr)
		}
	}
	if !strings.Contains(tr, `"surface":"mcp"`) {
		t.Errorf("the audit events do not name the surface")
	}
	if _, err := trace.Read(strings.NewReader(tr)); err != nil {
		t.Errorf("the journal with its audit events does not read as a trace: %v", err)
	}
	list := mcptest.Structured(t, call(t, c, "session_list_kitsoki", nil))
	if all, _ := list["sessions"].([]any); len(all) != 1 {
		t.Errorf("list: %v", list)
	}
	fork := mcptest.Structured(t, call(t, c, "session_fork_kitsoki", map[string]any{"session": "mcp:thread-1", "at_turn": 0}))
	forkID, _ := fork["id"].(string)
	if forkID == "" || fork["forked_from"] != f.Session.ID {
		t.Fatalf("fork: %v", fork)
	}
	f = frameOf(t, "continue the fork", call(t, c, "session_continue_kitsoki", map[string]any{"session": forkID}))
	if f.Outcome != "resumed" || f.State != "lobby" {
		t.Errorf("continue the fork: %+v", f)
	}
	// The server holds the fork live: another process is refused.
	if code, _, errs := runCLI(t, "", "session", "continue", forkID, "--raw", "greet name=Bob", "--sessions-dir", sessions); code != exitBusy || !strings.Contains(errs, "is busy") {
		t.Errorf("continue of a session the server holds: exit %d\n%s", code, errs)
	}
	if res := call(t, c, "session_delete_kitsoki", map[string]any{"session": forkID}); res.IsError {
		t.Errorf("delete: %s", mcptest.Text(res))
	}
	if res := call(t, c, "session_inspect_kitsoki", map[string]any{"session": forkID}); !res.IsError || !strings.Contains(mcptest.Text(res), "no such session") {
		t.Errorf("inspect after delete: %s", mcptest.Text(res))
	}

	cfg := mcptest.Connect(t, mcpServer(t, "--root", repo, "--sessions-dir", sessions), "tok", mcptest.Modern, false)
	if names := strings.Join(mcptest.ToolNames(t, cfg), ","); strings.Contains(names, "session_") {
		t.Errorf("the configuration surface offers session tools: %s", names)
	}
}

// The server keeps at most --max-live-sessions sessions live: opening another
// closes the least recently used idle one, which another process can then
// continue; the live one stays busy for it.
func TestMCPSessionCap(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sessions := t.TempDir()
	c := mcptest.Connect(t, mcpServer(t, "--surface", "external", "--root", repo, "--sessions-dir", sessions, "--max-live-sessions", "1"), "tok", mcptest.Modern, false)
	frameOf(t, "new 1", call(t, c, "session_new_kitsoki", map[string]any{"story": "stories/hello", "key": "cap:1"}))
	frameOf(t, "new 2", call(t, c, "session_new_kitsoki", map[string]any{"story": "stories/hello", "key": "cap:2"}))
	if code, _, errs := runCLI(t, "", "session", "continue", "cap:1", "--raw", "greet name=Ada", "--sessions-dir", sessions); code != exitOK {
		t.Errorf("continue of the session the cap closed: exit %d\n%s", code, errs)
	}
	if code, _, _ := runCLI(t, "", "session", "continue", "cap:2", "--raw", "greet name=Ada", "--sessions-dir", sessions); code != exitBusy {
		t.Errorf("continue of the live session: exit %d, want %d", code, exitBusy)
	}
	// The server picks cap:1 up again from its journal, turn 1 included.
	f := frameOf(t, "submit to the closed one", call(t, c, "session_submit_kitsoki", map[string]any{"session": "cap:1", "raw": "again"}))
	if f.Session.Turn != 2 || f.State != "lobby" {
		t.Errorf("cap:1 after a continue elsewhere: turn %d state %q", f.Session.Turn, f.State)
	}
	if code, _, errs := runCLI(t, "", "mcp", "serve", "--max-live-sessions", "0", "--stdio"); code != exitUsage || !strings.Contains(errs, "--max-live-sessions 0") {
		t.Errorf("--max-live-sessions 0: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "", "mcp", "serve", "--namespace", "x", "--stdio"); code != exitUsage ||
		!strings.Contains(errs, "--namespace applies to a session on a Temporal cluster: give --temporal HOST:PORT too") {
		t.Errorf("--namespace without --temporal: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "", "mcp", "serve", "--surface", "external", "--temporal", "127.0.0.1:1", "--connect-timeout", "200ms", "--stdio"); code != exitFailure ||
		!strings.Contains(errs, "kitsoki: cannot reach the Temporal server at 127.0.0.1:1") {
		t.Errorf("--temporal of no cluster: exit %d\n%s", code, errs)
	}
}
