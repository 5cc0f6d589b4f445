package copilotcli

import (
	"context"
	"crypto/rand"
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
		return nil, agent.Errorf(agent.KindTransportError, "copilot CLI: nil request")
	}
	req := c.Request
	ctx, cancel := clirun.WithDeadline(ctx, req.Deadline)
	defer cancel()
	cli := copilotCLI()
	bin, err := cli.LookPath(a.decl.Command, a.decl.Where())
	if err != nil {
		return nil, err
	}
	if a.decl.BaseURL != "" && c.Model == "" {
		return nil, agent.Errorf(agent.KindTransportError, "copilot CLI: a base_url: provider needs a model (Copilot's own models do not apply): set model: under %s", a.decl.Where())
	}
	provider, keys := a.providerEnv(c.Model)
	if name := a.decl.APIKeyEnv; name != "" && a.decl.BaseURL != "" && len(keys) == 0 {
		return nil, agent.Errorf(agent.KindTransportError, "copilot CLI: api_key_env %s is not set; export %s=<your key>, or remove api_key_env: under %s", name, name, a.decl.Where())
	}
	secrets := append(append([]string(nil), a.decl.Secrets...), keys...)
	mask := secret.New(secrets)
	sess, err := cli.OpenSession(&a.mcp, c, toolloop.Options{Secrets: secrets, Clock: a.opts.Clock, Logger: a.opts.Logger})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	r, cleanup, err := a.plan(c, sess)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	var st *openai.Structured
	if clirun.HasSchema(req.Schema) {
		s := openai.Prepare(req.Schema)
		st = &s
	}
	dir := a.decl.Dir
	if p := c.Persona; p != nil && p.Cwd != "" {
		dir = p.Cwd
	}
	env := clirun.Environ(a.opts.Environ, map[string]string{"KITSOKI_SESSION_ID": req.SessionID}, a.decl.Env, provider)
	out := clirun.Exec(ctx, clirun.Run{Name: cli.Name, Path: bin, Args: a.args(r), Dir: dir, Env: env, Stdin: prompt(c, st != nil), Logger: a.opts.Logger})
	if err := cli.Failed(ctx, out, bin); err != nil {
		return nil, err
	}
	if a.opts.OnOutput != nil {
		a.opts.OnOutput(out.Stdout)
	}
	res := parseOutput(out.Stdout)
	res.readUsage(r.usageFile)
	if err := check(res, out, mask, a.decl.Where()); err != nil {
		return nil, err
	}
	a.remember(c, r, res)
	return a.response(c, r, res, sess, st, mask), nil
}

// plan decides the run and writes its files (the MCP config, which holds
// the session's token, and the usage file), which cleanup removes.
func (a *Agent) plan(c *agent.Call, sess *toolserver.Session) (run, func(), error) {
	r := run{model: c.Model, effort: c.Effort, approval: a.approval(c)}
	if name := a.decl.APIKeyEnv; name != "" {
		r.secretEnv = append(r.secretEnv, name)
	}
	var files []string
	cleanup := func() {
		for _, f := range files {
			os.Remove(f)
		}
	}
	f, err := clirun.WriteTemp("kitsoki-copilot-mcp-*.json", mcpConfig(sess.URL(), sess.Token()))
	if err != nil {
		return r, cleanup, agent.Errorf(agent.KindTransportError, "copilot CLI: write the MCP config: %w", err)
	}
	files = append(files, f)
	r.mcpConfig = f
	u, err := clirun.WriteTemp("kitsoki-copilot-usage-*.json", nil)
	if err != nil {
		return r, cleanup, agent.Errorf(agent.KindTransportError, "copilot CLI: make the usage file: %w", err)
	}
	files = append(files, u)
	r.usageFile = u
	if c.Request.Verb == plugin.VerbConverse {
		a.mu.Lock()
		r.session = a.sessions[clirun.ConverseKey(c)]
		a.mu.Unlock()
		r.resumed = r.session != ""
		if !r.resumed {
			r.session = newUUID()
		}
	}
	return r, cleanup, nil
}

// check turns a failed run into the call's failure: the CLI's own
// message (with a fix for a model it refused), its exit status and the
// tail of its stderr, secrets masked.
func check(res *result, out clirun.Output, mask *secret.Masker, where string) error {
	f := res.failure()
	code := out.ExitCode
	if res.hasResult && res.exitCode != 0 {
		code = res.exitCode
	}
	var msg string
	switch {
	case f != "" && unreachable(f):
		return agent.Errorf(agent.KindTransportError, "copilot CLI cannot reach its model provider (%s): check base_url: under %s (and that the server is up)",
			mask.Text(oneLine(f)), where)
	case f != "" && clirun.ModelRefused(f):
		msg = "copilot CLI reported a failure: " + oneLine(f) + ": set model: under " + where + " to one its provider serves"
	case f != "":
		msg = "copilot CLI reported a failure: " + oneLine(f)
	case code != 0:
		msg = fmt.Sprintf("copilot CLI exited with status %d and reported nothing (stdout: %q)", code, agent.Clip(out.Stdout))
	case res.reply() == "" && res.toolCalls == 0:
		msg = "copilot CLI ended without an answer"
	default:
		return nil
	}
	return clirun.Crash(msg, oneLine(out.StderrTail()), mask)
}

// unreachable reports a failure to connect to the provider.
func unreachable(msg string) bool {
	return strings.Contains(msg, "Could not connect") || strings.Contains(msg, "ECONNREFUSED")
}

// oneLine folds a multi-line message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// remember keeps a converse call's session for the session's next call.
func (a *Agent) remember(c *agent.Call, r run, res *result) {
	if r.session == "" {
		return
	}
	id := res.sessionID
	if id == "" {
		id = r.session
	}
	a.mu.Lock()
	if a.sessions != nil {
		a.sessions[clirun.ConverseKey(c)] = id
	}
	a.mu.Unlock()
}

// response assembles the answer: the submission (submit's, else the final
// message read as JSON; without a schema the text on a plugin alias), the
// tool calls as sub-events, and the meta.
func (a *Agent) response(c *agent.Call, r run, res *result, sess *toolserver.Session, st *openai.Structured, mask *secret.Masker) *agent.AskResponse {
	text := mask.Text(res.reply())
	meta := map[string]any{"provider": "copilot", "model": c.Model, "result": text, "exit_code": 0, "session_id": res.sessionID,
		"approval": r.approval}
	if res.hasUsage {
		u := res.usage
		meta["usage"] = map[string]any{"input_tokens": u.Input, "output_tokens": u.Output, "cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheWrite}
		meta["premium_requests"] = res.premiumReqs
		if p := a.decl.Pricing; p != nil { // a subscription bills requests, not tokens: priced only when declared
			meta["cost_usd"] = httpllm.Cost(*p, httpllm.Tokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite})
		}
	}
	if r.session != "" {
		meta["session_resumed"] = r.resumed
	}
	return clirun.Response(c, sess, st, text, meta)
}

// newUUID returns a random UUIDv4 for --session-id.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
