package codexcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
)

// result is what one run reported in its JSONL events (codex exec
// --json): thread.started names the thread; item.completed carries the
// agent's messages, the commands it ran, its MCP tool calls and errors;
// turn.completed the usage; turn.failed and error what went wrong. Lines
// that are not JSON (a warning) and unknown event types are skipped.
type result struct {
	threadID string
	messages []string
	errors   []string
	failed   string // turn.failed's message
	usage    usage
	hasUsage bool
	turns    int
	commands int
	mcpCalls int
}

type usage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

type event struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Message string `json:"message"`
	} `json:"item"`
	Usage *usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// maxLine bounds one event line.
const maxLine = 8 << 20

func parseOutput(stdout []byte) *result {
	r := &result{}
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		r.take(&ev)
	}
	return r
}

func (r *result) take(ev *event) {
	switch ev.Type {
	case "thread.started":
		r.threadID = ev.ThreadID
	case "item.completed":
		if ev.Item == nil {
			return
		}
		switch ev.Item.Type {
		case "agent_message":
			r.messages = append(r.messages, ev.Item.Text)
		case "error":
			// codex reports non-fatal problems (unknown model metadata)
			// as error items; a real failure ends in turn.failed.
			r.errors = append(r.errors, ev.Item.Message)
		case "command_execution":
			r.commands++
		case "mcp_tool_call":
			r.mcpCalls++
		}
	case "turn.completed":
		r.turns++
		if ev.Usage != nil {
			u := *ev.Usage
			r.usage.InputTokens += u.InputTokens
			r.usage.CachedInputTokens += u.CachedInputTokens
			r.usage.OutputTokens += u.OutputTokens
			r.usage.ReasoningOutputTokens += u.ReasoningOutputTokens
			r.hasUsage = true
		}
	case "turn.failed":
		if ev.Error != nil {
			r.failed = ev.Error.Message
		}
	case "error":
		if ev.Message != "" {
			r.errors = append(r.errors, ev.Message)
		}
	}
}

// reply is the agent's last message.
func (r *result) reply() string {
	if len(r.messages) == 0 {
		return ""
	}
	return r.messages[len(r.messages)-1]
}

// failure is the run's own account of a failure ("" when it reports
// none): turn.failed's message, else the last error event.
func (r *result) failure() string {
	if r.failed != "" {
		return r.failed
	}
	if n := len(r.errors); n > 0 {
		return strings.Join(r.errors, "; ")
	}
	return ""
}
