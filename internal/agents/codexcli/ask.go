package codexcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

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
	ctx, cancel := clirun.WithDeadline(ctx, req.Deadline)
	defer cancel()
	cli := codexCLI()
	bin, err := cli.LookPath(a.decl.Command, a.decl.Where())
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
	sess, err := cli.OpenSession(&a.mcp, c, toolloop.Options{Secrets: a.decl.Secrets, Clock: a.opts.Clock, Logger: a.opts.Logger})
	if err != nil {
		return nil, err
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
	out := clirun.Exec(ctx, clirun.Run{Name: cli.Name, Path: bin, Args: a.args(r), Dir: r.dir, Env: env, Stdin: req.Prompt,
		Logger: a.opts.Logger, OnLine: func(line []byte) bool {
			unreachable = offline(line)
			return unreachable != ""
		}})
	if out.Stopped {
		return nil, agent.Errorf(agent.KindTransportError, "codex CLI cannot reach its model provider (%s): %s",
			mask.Text(unreachable), a.reachHint())
	}
	if err := cli.Failed(ctx, out, bin); err != nil {
		return nil, err
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
	if clirun.HasSchema(req.Schema) {
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
		r.resume = a.threads[clirun.ConverseKey(c)]
		a.mu.Unlock()
	}
	return r, structured, cleanup, nil
}

// check turns a failed run into the call's failure: the CLI's own
// message, its exit status and the tail of its stderr, secrets masked.
func check(res *result, out clirun.Output, mask *secret.Masker, where string) error {
	msg := ""
	switch f := res.failure(); {
	case res.failed != "" && clirun.ModelRefused(f):
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
	return clirun.Crash(msg, out.StderrTail(), mask)
}

// remember keeps a converse call's thread for the session's next call.
func (a *Agent) remember(c *agent.Call, res *result) {
	if c.Request.Verb != plugin.VerbConverse || res.threadID == "" {
		return
	}
	a.mu.Lock()
	if a.threads != nil {
		a.threads[clirun.ConverseKey(c)] = res.threadID
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
	return clirun.Response(c, sess, st, text, meta)
}
