package claudecli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// result is what one CLI run reported. Fields are read by name from the
// result envelope (type "result"), the init event and assistant messages;
// the key order and set vary between CLI versions, and unknown keys are
// ignored.
type result struct {
	hasEnvelope       bool
	subtype           string
	isError           bool
	apiErrorStatus    string
	resultText        *string // the envelope's result, when present
	errors            []string
	sessionID         string
	model             string
	totalCost         float64
	durationMS        float64
	numTurns          float64
	usage             map[string]any
	modelUsage        map[string]any
	permissionDenials int
	// reply is the reply text: the envelope's result, else the joined
	// assistant text, else the raw output.
	reply    string
	exitCode int
}

// maxLine bounds one stream-json line.
const maxLine = 8 << 20

// parseOutput reads the CLI's stdout: one JSON envelope (--output-format
// json), a JSON array of events (json with --verbose), or one event per
// line (stream-json; lines that are not JSON are skipped).
func parseOutput(stdout []byte) *result {
	r := &result{}
	var assistant []string
	handle := func(ev map[string]any) {
		switch str(ev["type"]) {
		case "system":
			if str(ev["subtype"]) == "init" {
				if id := str(ev["session_id"]); id != "" {
					r.sessionID = id
				}
				r.model = str(ev["model"])
			}
		case "assistant":
			msg, _ := ev["message"].(map[string]any)
			items, _ := msg["content"].([]any)
			for _, it := range items {
				m, _ := it.(map[string]any)
				if str(m["type"]) == "text" && str(m["text"]) != "" {
					assistant = append(assistant, str(m["text"]))
				}
			}
		case "result":
			r.envelope(ev)
		}
	}
	trimmed := bytes.TrimSpace(stdout)
	var whole any
	if len(trimmed) > 0 && json.Unmarshal(trimmed, &whole) == nil {
		switch v := whole.(type) {
		case map[string]any:
			handle(v)
		case []any:
			for _, e := range v {
				if m, ok := e.(map[string]any); ok {
					handle(m)
				}
			}
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(stdout))
		sc.Buffer(make([]byte, 0, 64<<10), maxLine)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				handle(ev)
			}
		}
	}
	switch {
	case r.resultText != nil && *r.resultText != "":
		r.reply = *r.resultText
	case len(assistant) > 0:
		r.reply = strings.Join(assistant, "\n")
	default:
		r.reply = string(trimmed)
	}
	return r
}

// envelope reads the result envelope.
func (r *result) envelope(ev map[string]any) {
	r.hasEnvelope = true
	r.subtype = str(ev["subtype"])
	r.isError, _ = ev["is_error"].(bool)
	if v, ok := ev["api_error_status"]; ok && v != nil {
		r.apiErrorStatus = strings.TrimSuffix(fmt.Sprint(v), ".0")
		if f, ok := v.(float64); ok {
			r.apiErrorStatus = fmt.Sprintf("%d", int64(f))
		}
	}
	if s, ok := ev["result"].(string); ok {
		r.resultText = &s
	}
	if errs, ok := ev["errors"].([]any); ok {
		for _, e := range errs {
			r.errors = append(r.errors, fmt.Sprint(e))
		}
	}
	if id := str(ev["session_id"]); id != "" {
		r.sessionID = id
	}
	r.totalCost = num(ev["total_cost_usd"])
	r.durationMS = num(ev["duration_ms"])
	r.numTurns = num(ev["num_turns"])
	r.usage, _ = ev["usage"].(map[string]any)
	r.modelUsage, _ = ev["modelUsage"].(map[string]any)
	if d, ok := ev["permission_denials"].([]any); ok {
		r.permissionDenials = len(d)
	}
}

// message is the CLI's own account of a failure: the result text, else
// its errors.
func (r *result) message() string {
	if r.resultText != nil && *r.resultText != "" {
		return *r.resultText
	}
	return strings.Join(r.errors, "; ")
}

// usageModel names the model from the envelope's modelUsage when the init
// event did not (the one with the most output tokens).
func (r *result) usageModel() string {
	names := make([]string, 0, len(r.modelUsage))
	for k := range r.modelUsage {
		names = append(names, k)
	}
	sort.Strings(names)
	best, most := "", -1.0
	for _, n := range names {
		m, _ := r.modelUsage[n].(map[string]any)
		if out := num(m["outputTokens"]); out > most {
			best, most = n, out
		}
	}
	return best
}

// addUsage sums two usage objects key by key (numbers add, nested objects
// recurse, anything else keeps the latest value).
func addUsage(acc, u map[string]any) map[string]any {
	if u == nil {
		return acc
	}
	if acc == nil {
		acc = map[string]any{}
	}
	for k, v := range u {
		switch x := v.(type) {
		case float64:
			prev, _ := acc[k].(float64)
			acc[k] = prev + x
		case map[string]any:
			prev, _ := acc[k].(map[string]any)
			acc[k] = addUsage(prev, x)
		default:
			acc[k] = v
		}
	}
	return acc
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}
