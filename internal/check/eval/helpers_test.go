package eval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// copyStory copies testdata/audit into a temporary directory and returns
// it, so a test can edit the story, the dataset and the reports.
func copyStory(t *testing.T) string {
	return testkit.CopyDir(t, filepath.Join("testdata", "audit"))
}

// mustCheck checks a dataset and fails the test on an unreadable file.
func mustCheck(t *testing.T, path string) *Checked {
	t.Helper()
	c, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var amountRE = regexp.MustCompile(`Amount: (\d+)`)
var claimRE = regexp.MustCompile(`Claim: (\S+)`)

// policy is the right answer to a rendered audit prompt: approve at most
// 100. The test agents read the prompt, so they only answer right when the
// host rendered it from the example's args.
func policy(prompt string) (claim, decision string) {
	m := amountRE.FindStringSubmatch(prompt)
	if m == nil {
		return "", "no amount in prompt"
	}
	n, _ := strconv.Atoi(m[1])
	if c := claimRE.FindStringSubmatch(prompt); c != nil {
		claim = c[1]
	}
	if n <= 100 {
		return claim, "approve"
	}
	return claim, "reject"
}

func answer(v any, meta map[string]any) (*agent.AskResponse, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &agent.AskResponse{Submission: b, Meta: meta}, nil
}

// localLike is an in-process agent the host treats like builtin.local_llm:
// its schema-invalid answers are retried on agent.claude.
type localLike struct{ agent.AgentFunc }

func (localLike) FallbackEligible() bool { return true }

// testAgents are the in-process agents of testdata/audit:
//
//	agent.good   always right; cost 0.002, 100+20 tokens; checks the routed model
//	agent.flaky  wrong on the taxi claim; cost 0.0005, 50+10 tokens
//	agent.bad    answers without a reason (schema-invalid)
//	agent.crash  fails with plugin_crash
//	agent.local  schema-invalid, fallback-eligible; agent.claude answers right
//	agent.retry  right; reports one nudge on amounts above 100
//	agent.slow   never answers: it waits for the deadline (which, on a fake
//	             clock, only Advance brings; tests that use it register
//	             their own)
func testAgents(t testing.TB, st *story.Story) *agent.Registry {
	t.Helper()
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	reg.Register("agent.good", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		_, d := policy(req.Prompt)
		model := call.Model
		return answer(map[string]any{"decision": d, "reason": "policy"},
			map[string]any{"cost_usd": 0.002, "usage": map[string]any{"input_tokens": 100, "output_tokens": 20}, "model": model})
	}))
	reg.Register("agent.flaky", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		claim, d := policy(req.Prompt)
		if claim == "taxi" {
			d = "reject"
		}
		return answer(map[string]any{"decision": d, "reason": "guess"},
			map[string]any{"cost_usd": 0.0005, "usage": map[string]any{"input_tokens": 50, "output_tokens": 10}})
	}))
	reg.Register("agent.bad", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		_, d := policy(req.Prompt)
		return answer(map[string]any{"decision": d}, nil)
	}))
	reg.Register("agent.crash", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		return nil, agent.Errorf(agent.KindPluginCrash, "boom")
	}))
	reg.Register("agent.local", localLike{func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		return answer(map[string]any{"decision": "maybe"}, map[string]any{"prompt_tokens": 30, "completion_tokens": 5})
	}})
	reg.Register(agent.DefaultAlias, agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		_, d := policy(req.Prompt)
		return answer(map[string]any{"decision": d, "reason": "claude"}, map[string]any{"cost_usd": 0.01})
	}))
	reg.Register("agent.retry", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		_, d := policy(req.Prompt)
		meta := map[string]any{}
		if d == "reject" {
			meta["nudges"] = 1
		}
		return answer(map[string]any{"decision": d, "reason": "r"}, meta)
	}))
	reg.Register("agent.slow", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	return reg
}

// setMatrix rewrites the dataset's matrix: line block.
func setDataset(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := edit(string(b))
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceBlock replaces the YAML block starting at the line that begins
// with key (up to the next top-level key) with repl.
func replaceBlock(s, key, repl string) string {
	lines := strings.Split(s, "\n")
	var out []string
	skipping := false
	for _, l := range lines {
		if strings.HasPrefix(l, key) {
			skipping = true
			out = append(out, strings.TrimRight(repl, "\n"))
			continue
		}
		if skipping && (strings.HasPrefix(l, " ") || l == "") {
			continue
		}
		skipping = false
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
