package claudecli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// Permission modes kitsoki picks by itself, per verb.
const (
	ModeDefault     = "default"
	ModeAcceptEdits = "acceptEdits"
	modeBypass      = "bypassPermissions"
)

// disallowedTools are the CLI's own tools an agent call must not use: it
// asks through kitsoki's question tools and does not spawn sub-agents.
const disallowedTools = "AskUserQuestion,Agent,Task"

// permissionMode picks the permission mode of a verb: Options, then the
// environment, then acceptEdits for task and default for the judgement
// verbs. In print mode every tool that is not approved is denied, so
// default lets the model use only the tools --allowedTools names (and the
// CLI's read-only ones); task may also edit files. bypassPermissions is
// only ever used when configured, and refused as root, where the CLI
// refuses it too.
func (a *Agent) permissionMode(verb string) (string, error) {
	mode := a.opts.PermissionMode
	if mode == "" {
		mode = os.Getenv(PermissionModeEnv)
	}
	if mode == "" {
		mode = ModeDefault
		if verb == plugin.VerbTask {
			mode = ModeAcceptEdits
		}
	}
	if isRoot() && (mode == modeBypass || slices.Contains(a.opts.Args, "--dangerously-skip-permissions")) {
		return "", agent.Errorf(agent.KindTransportError,
			"claude CLI: permission mode %s is refused when running as root; use %s or %s (set %s or the agent's permission mode)",
			modeBypass, ModeDefault, ModeAcceptEdits, PermissionModeEnv)
	}
	return mode, nil
}

// args builds the CLI's flags for one run. first is false for a nudge,
// which resumes the run's own session.
func (a *Agent) args(c *call, first bool) []string {
	args := []string{"-p",
		"--permission-mode", c.mode,
		"--setting-sources", "project,local",
		"--disable-slash-commands",
		"--strict-mcp-config",
	}
	persona := ""
	if c.info.Persona != nil {
		persona = c.info.Persona.SystemPrompt
	}
	flag := "--system-prompt"
	if c.info.Persona != nil && c.info.Persona.InheritDefault {
		flag = "--append-system-prompt" // on top of the CLI's default prompt
	}
	switch {
	case persona != "" && c.needs:
		args = append(args, flag, persona+"\n\n"+submitInstructions)
	case persona != "":
		args = append(args, flag, persona)
	case c.needs:
		args = append(args, "--append-system-prompt", submitInstructions)
	}
	if c.model != "" {
		args = append(args, "--model", c.model)
	}
	if c.effort != "" {
		args = append(args, "--effort", c.effort)
	}
	disallowed := disallowedTools
	if c.info.ReadOnly {
		disallowed += "," + strings.Join(agent.ReadOnlyDeniedTools(), ",")
	}
	args = append(args, "--disallowedTools", disallowed)
	var allowed []string
	if c.info.Persona != nil {
		allowed = personaTools(c.info.Persona.Tools, c.bash, c.info.ReadOnly)
	}
	for _, name := range c.sess.ToolNames() {
		allowed = append(allowed, "mcp__"+toolserver.ServerName+"__"+name)
	}
	if c.sess.HasCatalog() {
		// Plugin tools can be enabled while the CLI runs; print mode denies
		// a tool --allowedTools does not name, so kitsoki's server as a
		// whole is approved too (it offers only what the profile allows).
		allowed = append(allowed, "mcp__"+toolserver.ServerName)
	}
	if len(allowed) > 0 {
		args = append(args, "--allowedTools", strings.Join(allowed, ","))
	}
	args = append(args, "--mcp-config", c.mcpFile)
	if a.opts.JSONOutput {
		args = append(args, "--output-format", "json")
	} else {
		args = append(args, "--output-format", "stream-json", "--verbose")
	}
	if first && c.resume == "" {
		args = append(args, "--session-id", c.sessionID)
	} else {
		args = append(args, "--resume", c.resume)
	}
	if a.opts.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(a.opts.MaxTurns))
	}
	return append(args, a.opts.Args...)
}

// environ builds the child's environment: the base environment with
// kitsoki's binary directory first on PATH, KITSOKI_SESSION_ID, a bounded
// CLAUDE_CODE_MAX_RETRIES (unless already set), the declaration's env, the
// provider's env, and ENABLE_TOOL_SEARCH=false last, so MCP tools are
// offered directly instead of behind the ToolSearch tool.
func (a *Agent) environ(req *agent.AskRequest, provider map[string]string) []string {
	base := a.opts.Environ
	if base == nil {
		base = os.Environ()
	}
	env := map[string]string{}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if p := env["PATH"]; p != "" {
			env["PATH"] = dir + string(os.PathListSeparator) + p
		} else {
			env["PATH"] = dir
		}
	}
	env["KITSOKI_SESSION_ID"] = req.SessionID
	if _, ok := env["CLAUDE_CODE_MAX_RETRIES"]; !ok {
		env["CLAUDE_CODE_MAX_RETRIES"] = strconv.Itoa(a.opts.MaxRetries)
	}
	for k, v := range a.opts.Env {
		env[k] = v
	}
	for k, v := range provider {
		env[k] = v
	}
	env["ENABLE_TOOL_SEARCH"] = "false"
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// writeMCPConfig writes the --mcp-config file pointing the CLI at the
// call's MCP session. It holds the session's bearer token, so it is
// private to the user and removed when the call ends.
func writeMCPConfig(s *toolserver.Session) (string, error) {
	cfg := map[string]any{"mcpServers": map[string]any{
		toolserver.ServerName: map[string]any{
			"type":    "http",
			"url":     s.URL(),
			"headers": map[string]string{"Authorization": "Bearer " + s.Token()},
		},
	}}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "kitsoki-mcp-*.json")
	if err != nil {
		return "", fmt.Errorf("write the MCP config: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("write the MCP config: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write the MCP config: %w", err)
	}
	return f.Name(), nil
}

func removeFile(path string) {
	if path != "" {
		_ = os.Remove(path)
	}
}

// redact masks the secret values in s as text, by the one masking rule
// (internal/base/secret).
func redact(s string, secrets []string) string {
	return secret.New(secrets).Text(s)
}

// clipString cuts a message quoted in an error detail.
func clipString(s string) string { return agent.Clip([]byte(s)) }

// stderrTail is the last agent.QuoteLimit bytes of stderr, trimmed.
func stderrTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > agent.QuoteLimit {
		return "..." + s[len(s)-agent.QuoteLimit:]
	}
	return s
}

// personaTools is the --allowedTools entries of a persona's tools: a
// read-only call drops the mutating ones; a bash profile that lists
// programs turns Bash into one Bash(<program>:*) rule per program.
func personaTools(tools []string, bash *agent.BashProfile, readOnly bool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		switch {
		case readOnly && slices.Contains(agent.ReadOnlyDeniedTools(), t):
			continue
		case t == "Bash" && bash != nil && !bash.Sandboxed:
			for _, cmd := range bash.Allowed() {
				out = append(out, "Bash("+cmd+":*)")
			}
			continue
		}
		out = append(out, t)
	}
	return out
}

// sandboxEnv is the environment of a sandboxed bash profile: TMPDIR is the
// call's scratch directory, and every proxy variable points at a closed
// loopback port so HTTP clients cannot reach the network.
func sandboxEnv(scratch string) []string {
	const deny = "http://127.0.0.1:9"
	return []string{"TMPDIR=" + scratch, "HTTP_PROXY=" + deny, "HTTPS_PROXY=" + deny, "ALL_PROXY=" + deny,
		"http_proxy=" + deny, "https_proxy=" + deny, "all_proxy=" + deny, "NO_PROXY=", "no_proxy="}
}
