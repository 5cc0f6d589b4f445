package codexcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/clirun"
	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
	"github.com/kitsoki/kitsoki/internal/agents/openai"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// Ask runs the CLI for one agent call, on the model the host resolved
// (call.Model; none is the CLI's default).
func (a *Agent) Ask(ctx context.Context, c *agent.Call) (*agent.AskResponse, error) {
	if c == nil || c.Request == nil {
		return nil, agent.Errorf(agent.KindTransportError, "codex CLI: nil request")
	}
	req := c.Request
	if d, err := time.Parse(time.RFC3339Nano, req.Deadline); err == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	bin, err := codexCLI().LookPath(a.decl.Command, a.decl.Where())
	if err != nil {
		return nil, err
	}
	if name := a.decl.APIKeyEnv; name != "" {
		if v, ok := clirun.Lookup(name, a.decl.Env, a.opts.Environ); !ok || v == "" {
			return nil, agent.Errorf(agent.KindTransportError, "codex CLI: api_key_env %s is not set; export %s=<your key>, or remove api_key_env: under %s",
				name, name, a.decl.Where())
		}
	}
	mask := secret.New(a.decl.Secrets)
	cfg, err := toolloop.SessionConfig(c, toolloop.Options{Secrets: a.decl.Secrets, Clock: a.opts.Clock, Logger: a.opts.Logger})
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "codex CLI: %w", err)
	}
	sess, err := a.mcp.Open(cfg)
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "codex CLI: open the call's MCP session: %w", err)
	}
	defer sess.Close()
	r, structured, cleanup, err := a.plan(c, sess)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	env := clirun.Environ(a.opts.Environ, map[string]string{"KITSOKI_SESSION_ID": req.SessionID}, a.decl.Env,
		map[string]string{TokenEnv: sess.Token()})
	var unreachable string
	out := clirun.Exec(ctx, clirun.Run{Name: "codex CLI", Path: bin, Args: a.args(r), Dir: r.dir, Env: env, Stdin: req.Prompt,
		Logger: a.opts.Logger, OnLine: func(line []byte) bool {
			unreachable = offline(line)
			return unreachable != ""
		}})
	if out.Stopped {
		return nil, agent.Errorf(agent.KindTransportError, "codex CLI cannot reach its model provider (%s): %s",
			mask.Text(unreachable), a.reachHint())
	}
	if ctx.Err() != nil {
		return nil, agent.Errorf(agent.KindDeadlineExceeded, "codex CLI did not finish before the call's deadline: %w", context.Cause(ctx))
	}
	if out.StartErr != nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "codex CLI: start %s: %v", bin, out.StartErr)
	}
	if a.opts.OnOutput != nil {
		a.opts.OnOutput(out.Stdout)
	}
	res := parseOutput(out.Stdout)
	if err := check(res, out, mask, a.decl.Where()); err != nil {
		return nil, err
	}
	a.remember(c, res)
	return a.response(c, r, res, sess, structured, mask), nil
}

// offline reads an event line: the CLI's message when it says it cannot
// reach its model provider. It would wait for the network without end;
// the call fails at once instead.
func offline(line []byte) string {
	var ev event
	if json.Unmarshal(line, &ev) != nil || ev.Type != "error" {
		return ""
	}
	if strings.Contains(ev.Message, "waiting for network") || strings.Contains(ev.Message, "Connection failed") {
		return ev.Message
	}
	return ""
}

// reachHint says what to check when the provider cannot be reached.
func (a *Agent) reachHint() string {
	if a.decl.BaseURL != "" {
		return "check base_url: under " + a.decl.Where() + " (and that the server is up)"
	}
	return "check the network (and codex login status)"
}

// plan decides the run: sandbox, approval, model, effort, the MCP
// session's URL, instructions, the output schema (written to a private
// file that cleanup removes), the directory, and the thread a converse
// call resumes.
func (a *Agent) plan(c *agent.Call, sess *toolserver.Session) (run, *openai.Structured, func(), error) {
	req := c.Request
	r := run{model: c.Model, effort: c.Effort, sandbox: a.sandbox(c), approval: a.approval(), mcpURL: sess.URL(),
		dir: a.decl.Dir, ephemeral: req.Verb != plugin.VerbConverse}
	if p := c.Persona; p != nil && p.Cwd != "" {
		r.dir = p.Cwd
	}
	cleanup := func() {}
	var structured *openai.Structured
	if hasSchema(req.Schema) {
		st := openai.Prepare(req.Schema)
		structured = &st
		if st.Strict && !st.Wrapped { // codex sends --output-schema strictly
			f, err := clirun.WriteTemp("kitsoki-codex-schema-*.json", st.Schema)
			if err != nil {
				return run{}, nil, cleanup, agent.Errorf(agent.KindTransportError, "codex CLI: write the output schema: %w", err)
			}
			r.schemaFile, cleanup = f, func() { os.Remove(f) }
		}
	}
	r.instructions = instructions(c, structured != nil)
	if !r.ephemeral {
		a.mu.Lock()
		r.resume = a.threads[threadKey(c)]
		a.mu.Unlock()
	}
	return r, structured, cleanup, nil
}

// check turns a failed run into the call's failure: the CLI's own
// message, its exit status and the tail of its stderr, secrets masked.
func check(res *result, out clirun.Output, mask *secret.Masker, where string) error {
	msg := ""
	switch f := res.failure(); {
	case res.failed != "" && modelRefused(f):
		msg = "codex CLI reported a failure: " + f + ": set model: under " + where + " to one its provider serves"
	case res.failed != "":
		msg = "codex CLI reported a failure: " + f
	case out.ExitCode != 0 && f != "":
		msg = fmt.Sprintf("codex CLI exited with status %d: %s", out.ExitCode, f)
	case out.ExitCode != 0:
		msg = fmt.Sprintf("codex CLI exited with status %d and reported nothing (stdout: %q)", out.ExitCode, agent.Clip(out.Stdout))
	default:
		return nil
	}
	if t := out.StderrTail(); t != "" {
		msg += "; stderr: " + t
	}
	return agent.Errorf(agent.KindPluginCrash, "%s", mask.Text(agent.Clip([]byte(msg))))
}

// modelRefused reports a failure about the model asked for.
func modelRefused(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "model") && (strings.Contains(m, "does not exist") || strings.Contains(m, "not supported") || strings.Contains(m, "not found"))
}

// remember keeps a converse call's thread for the session's next call.
func (a *Agent) remember(c *agent.Call, res *result) {
	if c.Request.Verb != plugin.VerbConverse || res.threadID == "" {
		return
	}
	a.mu.Lock()
	if a.threads != nil {
		a.threads[threadKey(c)] = res.threadID
	}
	a.mu.Unlock()
}

// response assembles the answer: the submission (submit's, else the final
// message read as JSON; without a schema the text on a plugin alias), the
// tool calls as sub-events, and the meta.
func (a *Agent) response(c *agent.Call, r run, res *result, sess *toolserver.Session, st *openai.Structured, mask *secret.Masker) *agent.AskResponse {
	text := mask.Text(res.reply())
	u := res.usage
	meta := map[string]any{
		"provider": "codex", "model": c.Model, "result": text, "exit_code": 0, "session_id": res.threadID,
		"num_turns": res.turns, "sandbox": r.sandbox, "approval": r.approval,
	}
	if res.hasUsage {
		meta["usage"] = map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cached_input_tokens": u.CachedInputTokens, "reasoning_output_tokens": u.ReasoningOutputTokens}
		if p := a.decl.Pricing; p != nil { // a subscription bills no tokens: priced only when declared
			meta["cost_usd"] = httpllm.Cost(*p, httpllm.Tokens{Input: u.InputTokens - u.CachedInputTokens, Output: u.OutputTokens, CacheRead: u.CachedInputTokens})
		}
	}
	if r.resume != "" {
		meta["session_resumed"] = true
	}
	if res.commands > 0 {
		meta["commands"] = res.commands
	}
	resp := &agent.AskResponse{Meta: meta, SubEvents: toolloop.SubEvents(c, toolloop.Namespace(c, ""), sess.ToolEvents())}
	switch sub, ok := sess.Submission(); {
	case ok:
		resp.Submission = sub
	case st != nil:
		b, _ := openai.AnswerJSON(text)
		resp.Submission = st.Unwrap(b)
	case c.Alias != "":
		resp.Submission, _ = json.Marshal(text)
	}
	return resp
}

func hasSchema(s json.RawMessage) bool {
	t := bytes.TrimSpace(s)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
