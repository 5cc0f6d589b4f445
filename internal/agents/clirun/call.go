package clirun

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/openai"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// WithDeadline bounds ctx by the request's deadline (RFC 3339). A
// deadline that does not parse, or none, leaves ctx as it is; cancel is
// then a no-op.
func WithDeadline(ctx context.Context, deadline string) (_ context.Context, cancel context.CancelFunc) {
	d, err := time.Parse(time.RFC3339Nano, deadline)
	if err != nil {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, d)
}

// OpenSession opens the call's tool session on srv: the session its tool
// profile and run allow, its secrets masked in tool results.
func (c CLI) OpenSession(srv *Server, call *agent.Call, o toolloop.Options) (*toolserver.Session, error) {
	cfg, err := toolloop.SessionConfig(call, o)
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "%s: %w", c.Name, err)
	}
	sess, err := srv.Open(cfg)
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "%s: open the call's MCP session: %w", c.Name, err)
	}
	return sess, nil
}

// Failed is the call's failure when the run did not get to an answer:
// the call's deadline came first, or the CLI (bin) could not be started.
// It is nil when the CLI ran to its end, whatever its exit status.
func (c CLI) Failed(ctx context.Context, out Output, bin string) error {
	if ctx.Err() != nil {
		return agent.Errorf(agent.KindDeadlineExceeded, "%s did not finish before the call's deadline: %w", c.Name, context.Cause(ctx))
	}
	if out.StartErr != nil {
		return agent.Errorf(agent.KindPluginCrash, "%s: start %s: %v", c.Name, bin, out.StartErr)
	}
	return nil
}

// Crash is the failure of a run that ended badly: msg, then the tail of
// the CLI's stderr when there is one, clipped, with secrets masked.
func Crash(msg, stderr string, mask *secret.Masker) error {
	if stderr != "" {
		msg += "; stderr: " + stderr
	}
	return agent.Errorf(agent.KindPluginCrash, "%s", mask.Text(agent.Clip([]byte(msg))))
}

// ModelRefused reports whether a CLI's failure message is about the
// model it was asked for (one its provider does not serve).
func ModelRefused(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "model") && (strings.Contains(m, "does not exist") || strings.Contains(m, "not supported") || strings.Contains(m, "not found"))
}

// ConverseKey is the key under which a transport keeps the CLI's
// conversation of a converse call: its session, persona and alias.
func ConverseKey(c *agent.Call) string {
	persona := ""
	if c.Persona != nil {
		persona = c.Persona.Name
	}
	return strings.Join([]string{c.Request.SessionID, persona, c.Alias}, "\x00")
}

// HasSchema reports whether the request's schema asks for a structured
// answer: it is neither empty nor JSON null.
func HasSchema(s json.RawMessage) bool {
	t := bytes.TrimSpace(s)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// Response is the call's answer with the given meta. The tool calls of
// the session are its sub-events. Its submission is the first valid
// submit; else the CLI's final text read as JSON when the call has a
// schema (st); else, on a plugin alias, that text as a JSON string.
func Response(c *agent.Call, sess *toolserver.Session, st *openai.Structured, text string, meta map[string]any) *agent.AskResponse {
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
