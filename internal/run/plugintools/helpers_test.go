package plugintools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/agents/transports"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// The plugins the tests run, built once into a temporary directory: the
// Go example plugin (examples/plugins/echo-go, whose one tool is echo)
// and testdata/toolplugin, whose tools misbehave on purpose.
var (
	echoBin, toolBin string
	buildErr         error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plugintools-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoBin, toolBin = filepath.Join(dir, "echo-go"), filepath.Join(dir, "toolplugin")
	buildErr = build(echoBin, "github.com/kitsoki/kitsoki/examples/plugins/echo-go")
	if buildErr == nil {
		buildErr = build(toolBin, "./testdata/toolplugin")
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(out, pkg string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("go toolchain not in PATH: %w", err)
	}
	if b, err := exec.Command(gobin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

func needPlugins(t testing.TB) {
	t.Helper()
	if buildErr != nil {
		t.Skip(buildErr)
	}
}

// logBuffer collects log records as JSON lines.
type logBuffer struct{ testkit.SyncBuffer }

// records returns the logged records whose message is msg.
func (l *logBuffer) records(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// env is one kitsoki process's worth of plugin tools: a registry with the
// real transports, the service, and an MCP HTTP server for sessions.
type env struct {
	reg  *agent.Registry
	svc  *Service
	srv  *toolserver.HTTPServer
	logs *logBuffer
	live map[string]bool // live runs
}

const (
	testRun       = "run-7f3a"
	testWorkspace = "tagging-story"
)

func newEnv(t testing.TB, decls map[string]agent.Declaration, opts Options) *env {
	t.Helper()
	needPlugins(t)
	e := &env{logs: &logBuffer{}, live: map[string]bool{testRun: true}}
	logger := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.reg = agent.NewRegistry(logger)
	transports.Register(e.reg, nil)
	e.reg.Configure(decls)
	opts.Registry, opts.Logger = e.reg, logger
	if opts.RunLive == nil {
		opts.RunLive = func(id string) bool { return e.live[id] }
	}
	svc, err := New(decls, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	srv, err := toolserver.ListenHTTP("", logger)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
		e.reg.Close()
	})
	return e
}

// session opens an agent call's MCP session on surface, bound to the test
// run and attached to the service's catalog.
func (e *env) session(t testing.TB, surface toolserver.Surface, callID string) *toolserver.Session {
	t.Helper()
	return e.open(t, toolserver.SessionConfig{Profile: profile(t, surface), RunID: testRun, SessionID: callID,
		WorkspaceID: testWorkspace, Live: toolserver.Detached(nil), Catalog: e.svc.Catalog()})
}

func (e *env) open(t testing.TB, cfg toolserver.SessionConfig) *toolserver.Session {
	t.Helper()
	s, err := e.srv.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// outside opens a session of the outside surface (internal/serve/mcpserve), as
// an operator's MCP client sees it.
func (e *env) outside(t testing.TB, cfg mcpserve.Config) *toolserver.Session {
	t.Helper()
	s, err := mcpserve.Open(e.srv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func profile(t testing.TB, surface toolserver.Surface) toolserver.Profile {
	t.Helper()
	p, err := toolserver.NewProfile(surface, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// subprocessDecl declares a subprocess plugin running bin with tools.
func subprocessDecl(alias, bin string, env map[string]string, tools ...agent.ToolDeclaration) agent.Declaration {
	return agent.Declaration{Alias: alias, Plugin: agent.PluginSubprocess, Command: bin, Env: env,
		Enabled: true, AgentTools: tools}
}

// toolPlugin declares testdata/toolplugin under alias, logging to a new
// file whose path it returns.
func toolPlugin(t testing.TB, alias string, mode string, tools ...agent.ToolDeclaration) (agent.Declaration, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "plugin.jsonl")
	env := map[string]string{"TOOLPLUGIN_LOG": log, "GORACE": "atexit_sleep_ms=0"}
	if mode != "" {
		env["TOOLPLUGIN_MODE"] = mode
	}
	return subprocessDecl(alias, toolBin, env, tools...), log
}

// decl builds a tool declaration with the conservative annotations.
func decl(name string, surfaces []string, input, output string) agent.ToolDeclaration {
	td := agent.ToolDeclaration{Name: name, Description: "The " + name + " tool.", Surfaces: surfaces,
		InputSchema: json.RawMessage(input), Annotations: agent.DefaultToolAnnotations}
	if output != "" {
		td.OutputSchema = json.RawMessage(output)
	}
	return td
}

var (
	kanbanOnly = []string{agent.SurfaceKanbanTask}
	bothTasks  = []string{agent.SurfaceKanbanTask, agent.SurfaceOfficeTask}
	anyObject  = `{"type":"object"}`
)

// pluginEvents reads the toolplugin's log.
func pluginEvents(t testing.TB, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// eventsOf keeps the events of one kind.
func eventsOf(evs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["event"] == kind {
			out = append(out, ev)
		}
	}
	return out
}

// eventually polls cond for up to 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testClient is a real mcp-go client of a session that counts
// tools/list_changed.
type testClient struct{ *mcptest.Client }

// connect opens a client speaking the current (stateless) protocol. With
// listen it subscribes to tools/list_changed and waits for the
// acknowledgement; without, it is a client that ignores the notification.
func connect(t testing.TB, s *toolserver.Session, listen bool) *testClient {
	t.Helper()
	return &testClient{mcptest.Connect(t, s.URL(), s.Token(), mcptest.Modern, listen)}
}

// tools lists the session's tools by name.
func (tc *testClient) tools(t testing.TB) map[string]mcp.Tool {
	t.Helper()
	return mcptest.Tools(t, tc)
}

// pluginToolNames lists the plugin tools (kitsoki_ prefix) offered.
func (tc *testClient) pluginToolNames(t testing.TB) []string {
	t.Helper()
	var out []string
	for name := range tc.tools(t) {
		if strings.HasPrefix(name, agent.ExposedToolPrefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// call calls a tool; it must answer without a protocol error.
func (tc *testClient) call(t testing.TB, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := tc.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// refused checks that a call to name does not go through: a protocol
// error (the session does not offer the tool: "tool not found") or a
// tool error, whose text must then contain want.
func (tc *testClient) refused(t testing.TB, name string, args map[string]any, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := tc.CallTool(ctx, req)
	switch {
	case err != nil:
		if !strings.Contains(err.Error(), "tool '"+name+"' not found") {
			t.Fatalf("call %s: %v, want tool not found", name, err)
		}
	default:
		mustFail(t, res, want)
	}
}

// mustFail checks that res is a tool error whose text contains want.
func mustFail(t testing.TB, res *mcp.CallToolResult, want string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("call succeeded (%q), want a tool error containing %q", mcptest.Text(res), want)
	}
	if !strings.Contains(mcptest.Text(res), want) {
		t.Fatalf("tool error:\n  %s\nwant it to contain:\n  %s", mcptest.Text(res), want)
	}
}

func callReq(name string) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	return req
}
