package copilotcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
)

// result is what one run reported in its JSONL events (copilot
// --output-format json): assistant.message carries the agent's messages,
// tool.execution_* its tool calls, session.error what went wrong, result
// the session id and exit code. Lines that are not JSON and unknown event
// types are skipped.
type result struct {
	sessionID   string
	messages    []string
	errors      []string
	toolCalls   int
	exitCode    int
	hasResult   bool
	usage       usage
	hasUsage    bool
	premiumReqs float64
}

type usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

type event struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	ExitCode  int    `json:"exitCode"`
	Data      struct {
		Content    string `json:"content"`
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	} `json:"data"`
}

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
		switch ev.Type {
		case "assistant.message":
			if strings.TrimSpace(ev.Data.Content) != "" {
				r.messages = append(r.messages, ev.Data.Content)
			}
		case "tool.execution_start":
			r.toolCalls++
		case "session.error":
			r.errors = append(r.errors, ev.Data.Message)
		case "result":
			r.sessionID, r.exitCode, r.hasResult = ev.SessionID, ev.ExitCode, true
		}
	}
	return r
}

// reply is the agent's last message.
func (r *result) reply() string {
	if len(r.messages) == 0 {
		return ""
	}
	return r.messages[len(r.messages)-1]
}

// failure is the run's own account of a failure, "" when none.
func (r *result) failure() string {
	return strings.Join(r.errors, "; ")
}

// readUsage reads the --usage-output-file the run wrote: the tokens of
// every model it called, and the premium requests.
func (r *result) readUsage(path string) {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return
	}
	var f struct {
		TotalPremiumRequestCost float64 `json:"totalPremiumRequestCost"`
		ModelMetrics            map[string]struct {
			Usage struct {
				InputTokens      int64 `json:"inputTokens"`
				OutputTokens     int64 `json:"outputTokens"`
				CacheReadTokens  int64 `json:"cacheReadTokens"`
				CacheWriteTokens int64 `json:"cacheWriteTokens"`
			} `json:"usage"`
		} `json:"modelMetrics"`
	}
	if json.Unmarshal(b, &f) != nil {
		return
	}
	for _, m := range f.ModelMetrics {
		r.usage.Input += m.Usage.InputTokens
		r.usage.Output += m.Usage.OutputTokens
		r.usage.CacheRead += m.Usage.CacheReadTokens
		r.usage.CacheWrite += m.Usage.CacheWriteTokens
		r.hasUsage = true
	}
	r.premiumReqs = f.TotalPremiumRequestCost
}
