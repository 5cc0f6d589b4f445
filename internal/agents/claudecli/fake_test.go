package claudecli

// The fake claude CLI. The test binary re-executes itself as `claude` when
// KITSOKI_FAKE_CLAUDE=1 is in its environment (see TestMain). It honours
// the flags kitsoki passes and the real CLI's output shapes, refuses
// unknown flags like the real one, and, when its script says so, connects
// to the MCP server named in --mcp-config with an mcp-go client and calls
// tools there, obeying --allowedTools and ENABLE_TOOL_SEARCH as Claude Code
// 2.1 does. Each invocation appends one JSON line to FAKE_CLAUDE_LOG.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// fakeScript drives the fake: one entry per invocation (the last repeats).
type fakeScript struct {
	Runs []fakeRun `json:"runs"`
}

type fakeRun struct {
	Calls          []fakeCall `json:"calls,omitempty"`
	Result         string     `json:"result,omitempty"`
	NoResult       bool       `json:"no_result,omitempty"`
	IsError        bool       `json:"is_error,omitempty"`
	Subtype        string     `json:"subtype,omitempty"`
	APIErrorStatus int        `json:"api_error_status,omitempty"`
	Exit           int        `json:"exit,omitempty"`
	Raw            string     `json:"raw,omitempty"`
	Stderr         string     `json:"stderr,omitempty"`
	SleepMS        int        `json:"sleep_ms,omitempty"`
	NoEnvelope     bool       `json:"no_envelope,omitempty"`
	// UsageModel names the model in the envelope's modelUsage (default:
	// the --model flag), as the CLI reports a resolved alias.
	UsageModel string `json:"usage_model,omitempty"`
}

type fakeCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// fakeLog is one invocation, as the tests read it.
type fakeLog struct {
	Args    []string          `json:"args"`
	Stdin   string            `json:"stdin"`
	Env     map[string]string `json:"env"`
	Flags   map[string]string `json:"flags"`
	Listed  []string          `json:"listed,omitempty"`
	Results []fakeResult      `json:"results,omitempty"`
	Denied  []string          `json:"denied,omitempty"`
	Dir     string            `json:"dir,omitempty"`
}

type fakeResult struct {
	Tool    string `json:"tool"`
	IsError bool   `json:"is_error"`
	Text    string `json:"text"`
}

// loggedEnv are the environment variables the fake records.
var loggedEnv = []string{"ENABLE_TOOL_SEARCH", "CLAUDE_CODE_MAX_RETRIES", "KITSOKI_SESSION_ID", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "DECL_VAR",
	"HTTPS_PROXY", "TMPDIR"}

var valueFlags = []string{"--permission-mode", "--setting-sources", "--system-prompt", "--append-system-prompt", "--model",
	"--disallowedTools", "--allowedTools", "--mcp-config", "--output-format", "--session-id", "--resume", "--max-turns", "--effort"}
var boolFlags = []string{"-p", "--print", "--disable-slash-commands", "--strict-mcp-config", "--verbose", "--exclude-dynamic-system-prompt-sections"}

func fakeClaude() int {
	args := os.Args[1:]
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case slices.Contains(boolFlags, a):
			flags[a] = "true"
		case slices.Contains(valueFlags, a) && i+1 < len(args):
			flags[a] = args[i+1]
			i++
		default:
			fmt.Fprintf(os.Stderr, "error: unknown option '%s'\n", a)
			return 1
		}
	}
	if flags["-p"] == "" {
		fmt.Fprintln(os.Stderr, "fake claude only runs in print mode")
		return 2
	}
	if flags["--output-format"] == "stream-json" && flags["--verbose"] == "" {
		fmt.Fprintln(os.Stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		return 1
	}
	if flags["--permission-mode"] == "bypassPermissions" && os.Geteuid() == 0 {
		fmt.Fprintln(os.Stderr, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")
		return 1
	}
	stdin, _ := io.ReadAll(os.Stdin)
	entry := fakeLog{Args: args, Stdin: string(stdin), Env: map[string]string{}, Flags: flags}
	entry.Dir, _ = os.Getwd()
	for _, k := range loggedEnv {
		if v, ok := os.LookupEnv(k); ok {
			entry.Env[k] = v
		}
	}

	var script fakeScript
	if b, err := os.ReadFile(os.Getenv("FAKE_CLAUDE_SCRIPT")); err == nil {
		if err := json.Unmarshal(b, &script); err != nil {
			fmt.Fprintln(os.Stderr, "fake claude: bad script:", err)
			return 2
		}
	}
	logPath := os.Getenv("FAKE_CLAUDE_LOG")
	n := 0
	if b, err := os.ReadFile(logPath); err == nil {
		n = strings.Count(string(b), "\n")
	}
	run := fakeRun{Result: "ok"}
	if len(script.Runs) > 0 {
		run = script.Runs[min(n, len(script.Runs)-1)]
	}
	var denials []any
	if len(run.Calls) > 0 {
		if err := fakeMCP(flags, run.Calls, &entry); err != nil {
			fmt.Fprintln(os.Stderr, "fake claude: mcp:", err)
			return 3
		}
		for _, d := range entry.Denied {
			denials = append(denials, map[string]any{"tool_name": d})
		}
	}
	if b, err := json.Marshal(entry); err == nil {
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	if run.SleepMS > 0 {
		time.Sleep(time.Duration(run.SleepMS) * time.Millisecond)
	}
	fmt.Fprint(os.Stderr, run.Stderr)
	if run.Raw != "" {
		fmt.Print(run.Raw)
		return run.Exit
	}
	session := flags["--session-id"]
	if session == "" {
		session = flags["--resume"]
	}
	model := flags["--model"]
	if model == "" {
		model = "claude-fake-default"
	}
	usageModel := model
	if run.UsageModel != "" {
		usageModel = run.UsageModel
	}
	subtype := run.Subtype
	if subtype == "" {
		subtype = "success"
	}
	envelope := map[string]any{
		"type": "result", "subtype": subtype, "is_error": run.IsError, "session_id": session,
		"total_cost_usd": 0.25, "duration_ms": 1200, "num_turns": 2,
		"usage":              map[string]any{"input_tokens": 10, "output_tokens": 5, "server_tool_use": map[string]any{"web_search_requests": 0}},
		"modelUsage":         map[string]any{usageModel: map[string]any{"outputTokens": 5}},
		"permission_denials": append([]any{}, denials...),
	}
	if !run.NoResult {
		envelope["result"] = run.Result
	}
	if run.APIErrorStatus != 0 {
		envelope["api_error_status"] = run.APIErrorStatus
	}
	enc := json.NewEncoder(os.Stdout)
	if flags["--output-format"] == "stream-json" {
		enc.Encode(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": model, "tools": entry.Listed})
		if !run.NoResult && run.Result != "" {
			enc.Encode(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": run.Result}}}})
		}
		fmt.Println("not json: a progress line")
	}
	if !run.NoEnvelope {
		enc.Encode(envelope)
	}
	return run.Exit
}

// fakeMCP connects to the --mcp-config server and makes the scripted calls.
func fakeMCP(flags map[string]string, calls []fakeCall, entry *fakeLog) error {
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(flags["--mcp-config"])
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	srv, ok := cfg.MCPServers["kitsoki"]
	if !ok || srv.Type != "http" {
		return fmt.Errorf("no http server named kitsoki in %s", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr, err := transport.NewStreamableHTTP(srv.URL, transport.WithHTTPHeaders(srv.Headers))
	if err != nil {
		return err
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		return err
	}
	// Claude Code 2.1 defers MCP tools behind ToolSearch unless
	// ENABLE_TOOL_SEARCH=false: the model then sees none of them.
	deferred := os.Getenv("ENABLE_TOOL_SEARCH") != "false"
	if !deferred {
		res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil {
			return err
		}
		for _, t := range res.Tools {
			entry.Listed = append(entry.Listed, t.Name)
		}
	}
	allowed := strings.Split(flags["--allowedTools"], ",")
	for _, call := range calls {
		if deferred || !slices.Contains(entry.Listed, call.Tool) || !(slices.Contains(allowed, "mcp__kitsoki__"+call.Tool) || slices.Contains(allowed, "mcp__kitsoki")) {
			entry.Denied = append(entry.Denied, call.Tool)
			continue
		}
		var req mcpgo.CallToolRequest
		req.Params.Name = call.Tool
		req.Params.Arguments = call.Args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			entry.Results = append(entry.Results, fakeResult{Tool: call.Tool, IsError: true, Text: "protocol error: " + err.Error()})
			continue
		}
		text := ""
		for _, ct := range res.Content {
			if tc, ok := mcpgo.AsTextContent(ct); ok {
				text = tc.Text
				break
			}
		}
		entry.Results = append(entry.Results, fakeResult{Tool: call.Tool, IsError: res.IsError, Text: text})
	}
	return nil
}
