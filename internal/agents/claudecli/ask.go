package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/plugin"
)

// call is everything one Ask decided before running the CLI.
type call struct {
	req      *agent.AskRequest
	info     *agent.Call
	bin      string
	model    string
	effort   string // --effort, "" for the CLI default
	mode     string
	env      []string
	secrets  []string
	provider string
	sess     *toolserver.Session
	mcpFile  string
	// reuseKey is non-empty for converse and task, whose claude session is
	// kept across the calls of one kitsoki session.
	reuseKey string
	// resume is the claude session to --resume; else sessionID is passed
	// with --session-id.
	resume    string
	sessionID string
	// resumed says the first run resumed a session kept from an earlier
	// call.
	resumed bool
	needs   bool // the call has a schema: a valid submit is required
	// dir is the child's working directory: the persona's cwd:, else the
	// declaration's.
	dir string
	// bash is the persona's bash_profile: as it applies to this verb (nil
	// for task and converse, which it does not restrict).
	bash *agent.BashProfile
	// scratch is a sandboxed profile's per-call TMPDIR, removed after the
	// call.
	scratch string
}

// Ask runs the CLI for one agent call, on the model the host resolved
// (call.Model; none means the CLI's default).
func (a *Agent) Ask(ctx context.Context, ac *agent.Call) (*agent.AskResponse, error) {
	if ac == nil || ac.Request == nil {
		return nil, agent.Errorf(agent.KindTransportError, "claude CLI: nil request")
	}
	req := ac.Request
	if d, ok := deadline(req.Deadline); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	c, err := a.prepare(ac)
	if err != nil {
		return nil, err
	}
	defer c.sess.Close()
	defer removeFile(c.mcpFile)
	if c.scratch != "" {
		defer os.RemoveAll(c.scratch)
	}

	var (
		runs   []*result
		nudges int
		tr     *transcript // the stream-json events of every run
	)
	if !a.opts.JSONOutput {
		tr = newTranscript(a.opts.Clock.Now())
	}
	// A failure carries the transcript captured so far.
	failed := func(err error) error {
		if ae, ok := agent.AsAskError(err); ok && ae.Transcript == nil {
			ae.Transcript = tr.result(c.secrets)
		}
		return err
	}
	for {
		first := len(runs) == 0
		stdin := req.Prompt
		if !first {
			stdin = nudgeText
		}
		out := a.run(ctx, c.bin, c.dir, a.args(c, first), c.env, stdin)
		if tr != nil {
			tr.addRun(out.stdout, out.ends)
		}
		if ctx.Err() != nil {
			return nil, failed(a.fail(c, agent.KindDeadlineExceeded, "claude CLI did not finish before the call's deadline: %w", context.Cause(ctx)))
		}
		if out.startErr != nil {
			return nil, a.fail(c, agent.KindPluginCrash, "claude CLI: start %s: %v", c.bin, out.startErr)
		}
		res := parseOutput(out.stdout)
		res.exitCode = out.exitCode
		runs = append(runs, res)
		a.remember(c, res)
		if err := a.check(c, res, out); err != nil {
			return nil, failed(err)
		}
		if !c.needs {
			break
		}
		if _, ok := c.sess.Submission(); ok {
			break
		}
		if nudges == a.opts.Nudges {
			return nil, failed(a.fail(c, agent.KindSchemaInvalid, "%s", noSubmitMessage(req.Verb)))
		}
		nudges++
		if tr != nil {
			tr.addNudge(nudges, nudgeText, a.opts.Clock.Now())
		}
		c.resume = c.sessionID
		if res.sessionID != "" {
			c.resume = res.sessionID
		}
		a.opts.Logger.Debug("claude CLI ended without a valid submit; nudging", "call", req.CallID, "nudge", nudges)
	}
	resp := a.response(c, runs, nudges)
	resp.Transcript = tr.result(c.secrets)
	return resp, nil
}

// noSubmitMessage is the schema_invalid detail of a call that never
// submitted (story-format.md §9 names decide's).
func noSubmitMessage(verb string) string {
	if verb == plugin.VerbDecide {
		return "host.agent.decide: model exited without calling submit — no verdict captured"
	}
	return "host.agent." + verb + ": model exited without calling submit — no submission captured"
}

// nudgeText is sent on stdin when a run is resumed for a missing submit.
const nudgeText = "You finished without calling the " + submitToolRef + " tool, so no result was recorded. " +
	"Call " + submitToolRef + " now with your answer as its arguments; they must match its input schema. " +
	"If it returns an error, correct the arguments and call it again. A text reply alone is not recorded."

const submitToolRef = "mcp__" + toolserver.ServerName + "__" + toolserver.ToolSubmit

// submitInstructions are added to the system prompt of calls with a
// schema.
const submitInstructions = "Deliver your result by calling the " + submitToolRef + " tool: its input schema is the shape of the result. " +
	"If it returns an error, correct the arguments and call it again. Your text reply is not recorded as the result."

// prepare resolves the binary, environment and permission mode, opens the
// call's MCP session and writes its config file. The model and effort are
// the call's, as the host resolved them. On error nothing it made is left
// behind.
func (a *Agent) prepare(info *agent.Call) (_ *call, err error) {
	bin, err := a.binary()
	if err != nil {
		return nil, err
	}
	req := info.Request
	c := &call{req: req, info: info, bin: bin, needs: len(req.Schema) > 0, model: info.Model, effort: info.Effort}
	c.secrets = append(c.secrets, a.opts.Secrets...)
	providerEnv, err := c.useProvider()
	if err != nil {
		return nil, err
	}
	if err := a.setProcess(c, providerEnv); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && c.scratch != "" {
			os.RemoveAll(c.scratch)
		}
	}()
	if err := a.openMCP(c); err != nil {
		return nil, err
	}
	a.pickSession(c)
	return c, nil
}

// useProvider takes the call's resolved provider: its name, and its
// environment, whose values are secrets. It returns that environment. A
// provider named but not resolved is refused.
func (c *call) useProvider() (map[string]string, error) {
	info := c.info
	switch {
	case info.Provider != nil:
		p := info.Provider
		c.provider = p.Name
		c.secrets = append(c.secrets, p.Secrets...)
		for _, v := range p.Env {
			c.secrets = append(c.secrets, v)
		}
		return p.Env, nil
	case info.ProviderName != "":
		return nil, agent.Errorf(agent.KindTransportError, "claude CLI: provider %q was named but not resolved; declare it under providers: with model: and env:", info.ProviderName)
	}
	return nil, nil
}

// setProcess sets how the CLI's process runs: its permission mode, its
// environment, its working directory and the persona's bash_profile:. A
// sandboxed profile gets its own scratch directory as TMPDIR.
func (a *Agent) setProcess(c *call, providerEnv map[string]string) error {
	req, info := c.req, c.info
	var err error
	if c.mode, err = a.permissionMode(req.Verb); err != nil {
		return err
	}
	if info.ReadOnly {
		c.mode = ModeDefault // only the allow-listed, non-mutating tools
	}
	c.env = a.environ(req, providerEnv)
	c.dir = a.opts.Dir
	if p := info.Persona; p != nil {
		if p.Cwd != "" {
			c.dir = p.Cwd
		}
		if p.Bash != nil && req.Verb != plugin.VerbTask && req.Verb != plugin.VerbConverse {
			c.bash = p.Bash
		}
	}
	if c.bash != nil && c.bash.Sandboxed && !info.ReadOnly {
		if c.scratch, err = os.MkdirTemp(c.bash.SandboxBase, "kitsoki-bash-"); err != nil {
			return agent.Errorf(agent.KindTransportError, "claude CLI: bash_profile sandboxed_write: make the scratch directory: %w", err)
		}
		c.env = append(c.env, sandboxEnv(c.scratch)...)
	}
	return nil
}

// openMCP opens the call's session on kitsoki's MCP server, with the tool
// profile of its verb and run, and writes the config file that points the
// CLI at it.
func (a *Agent) openMCP(c *call) error {
	cfg, err := toolloop.SessionConfig(c.info, toolloop.Options{Secrets: c.secrets, Clock: a.opts.Clock, Logger: a.opts.Logger})
	if err != nil {
		return agent.Errorf(agent.KindTransportError, "claude CLI: %w", err)
	}
	srv, err := a.server()
	if err != nil {
		return err
	}
	if c.sess, err = srv.Open(cfg); err != nil {
		return agent.Errorf(agent.KindTransportError, "claude CLI: open the call's MCP session: %w", err)
	}
	if c.mcpFile, err = writeMCPConfig(c.sess); err != nil {
		c.sess.Close()
		return agent.Errorf(agent.KindTransportError, "claude CLI: %w", err)
	}
	return nil
}

// pickSession picks the claude session the call runs in: for converse and
// task, the one kept for the same kitsoki session, verb, persona and
// provider; else a new one.
func (a *Agent) pickSession(c *call) {
	req, info := c.req, c.info
	if req.Verb == plugin.VerbConverse || req.Verb == plugin.VerbTask {
		persona := ""
		if info.Persona != nil {
			persona = info.Persona.Name
		}
		c.reuseKey = strings.Join([]string{req.SessionID, req.Verb, persona, c.provider}, "\x00")
		a.mu.Lock()
		c.resume = a.sessions[c.reuseKey]
		a.mu.Unlock()
	}
	c.resumed = c.resume != ""
	if c.resumed {
		c.sessionID = c.resume
	} else {
		c.sessionID = newSessionID()
	}
}

// remember keeps the claude session of a converse or task call for the
// next call of the same kitsoki session, once the CLI has reported it.
func (a *Agent) remember(c *call, res *result) {
	if c.reuseKey == "" || !res.hasEnvelope {
		return
	}
	id := res.sessionID
	if id == "" {
		id = c.sessionID
	}
	a.mu.Lock()
	if a.sessions != nil {
		a.sessions[c.reuseKey] = id
	}
	a.mu.Unlock()
}

// check turns a failed run into a plugin_crash with the CLI's message and
// the tail of its stderr.
func (a *Agent) check(c *call, res *result, out runOutput) error {
	tail := stderrTail(out.stderr)
	withTail := func(msg string) string {
		if tail != "" {
			msg += "; stderr: " + tail
		}
		return msg
	}
	switch {
	case !res.hasEnvelope && out.exitCode != 0:
		return a.fail(c, agent.KindPluginCrash, "%s", withTail(fmt.Sprintf("claude CLI exited with status %d and no result envelope (stdout: %q)", out.exitCode, agent.Clip(out.stdout))))
	case !res.hasEnvelope:
		return a.fail(c, agent.KindPluginCrash, "%s", withTail(fmt.Sprintf("claude CLI output has no result envelope (stdout: %q)", agent.Clip(out.stdout))))
	case res.isError:
		msg := "claude CLI reported an error"
		if res.apiErrorStatus != "" {
			msg += " (api_error_status " + res.apiErrorStatus + ")"
		}
		if res.subtype != "" {
			msg += " [" + res.subtype + "]"
		}
		if m := res.message(); m != "" {
			msg += ": " + clipString(m)
		}
		return a.fail(c, agent.KindPluginCrash, "%s", withTail(msg))
	case strings.HasPrefix(res.subtype, "error"):
		msg := fmt.Sprintf("claude CLI stopped with %s after %d turns", res.subtype, int64(res.numTurns))
		if m := res.message(); m != "" {
			msg += ": " + clipString(m)
		}
		return a.fail(c, agent.KindPluginCrash, "%s", withTail(msg))
	case out.exitCode != 0:
		msg := fmt.Sprintf("claude CLI exited with status %d", out.exitCode)
		if m := res.message(); m != "" {
			msg += ": " + clipString(m)
		}
		return a.fail(c, agent.KindPluginCrash, "%s", withTail(msg))
	}
	return nil
}

// fail builds an AskError with the call's secrets redacted from its
// detail.
func (a *Agent) fail(c *call, kind agent.ErrorKind, format string, args ...any) error {
	e := agent.Errorf(kind, format, args...)
	e.Detail = redact(e.Detail, c.secrets)
	if e.Err != nil && !errors.Is(e.Err, context.DeadlineExceeded) && !errors.Is(e.Err, context.Canceled) {
		e.Err = errors.New(redact(e.Err.Error(), c.secrets))
	}
	return e
}

// response assembles the AskResponse of a successful call.
func (a *Agent) response(c *call, runs []*result, nudges int) *agent.AskResponse {
	last := runs[len(runs)-1]
	text := ""
	for i := len(runs) - 1; i >= 0 && text == ""; i-- {
		text = runs[i].reply
	}
	var (
		cost, durationMS, turns float64
		usage                   map[string]any
	)
	for _, r := range runs {
		cost += r.totalCost
		durationMS += r.durationMS
		turns += r.numTurns
		usage = addUsage(usage, r.usage)
	}
	if usage == nil {
		usage = map[string]any{}
	}
	sessionID := last.sessionID
	if sessionID == "" {
		sessionID = c.sessionID
	}
	// The model the CLI reports (its init event, else the envelope's
	// modelUsage) wins over the one requested, which may be an alias.
	model := last.model
	if model == "" {
		model = last.usageModel()
	}
	if model == "" {
		model = c.model
	}
	meta := map[string]any{
		"result":          redact(text, c.secrets),
		"session_id":      sessionID,
		"usage":           usage,
		"cost_usd":        cost,
		"total_cost_usd":  last.totalCost,
		"duration_ms":     int64(durationMS),
		"num_turns":       int64(turns),
		"model":           model,
		"exit_code":       0,
		"permission_mode": c.mode,
	}
	if nudges > 0 {
		meta["nudges"] = nudges
	}
	if c.provider != "" {
		meta["provider"] = c.provider
	}
	if c.reuseKey != "" {
		meta["session_resumed"] = c.resumed
	}
	if n := last.permissionDenials; n > 0 {
		meta["permission_denials"] = n
	}
	resp := &agent.AskResponse{Meta: meta, SubEvents: a.subEvents(c)}
	if sub, ok := c.sess.Submission(); ok {
		resp.Submission = sub
	} else if !a.builtin && !c.needs {
		// On the plugin route the reply text is the answer of a call
		// without a schema; the built-in route binds it as stdout.
		b, _ := json.Marshal(meta["result"])
		resp.Submission = b
	}
	return resp
}

// subEvents records each MCP tool call as a sub-event of the agent call,
// without its arguments or results.
func (a *Agent) subEvents(c *call) []agent.Event {
	evs := c.sess.ToolEvents()
	if len(evs) == 0 {
		return nil
	}
	out := make([]agent.Event, len(evs))
	for i, ev := range evs {
		out[i] = agent.Event{
			Turn:      int64(c.req.Turn),
			TS:        ev.At.UTC().Format(time.RFC3339Nano),
			Kind:      a.namespace() + ".mcp." + ev.Tool,
			StatePath: c.req.StatePath,
			CallID:    c.req.CallID,
			Payload: map[string]any{
				"tool":        ev.Tool,
				"outcome":     ev.Outcome,
				"duration_ms": ev.Duration.Milliseconds(),
			},
		}
	}
	return out
}
