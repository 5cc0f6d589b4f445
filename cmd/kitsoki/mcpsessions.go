package main

import (
	"bytes"
	"context"
	"errors"

	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
)

// mcpSessions backs the MCP session tools with the session API: a pool of
// live sessions (capped; the least recently used idle one is closed to
// make room), every call that reaches a live session written into its
// trace (driver.KindAPICall).
type mcpSessions struct{ pool *driver.Pool }

var _ mcpserve.Sessions = mcpSessions{}

func audit(c mcpserve.Caller) driver.Audit {
	return driver.Audit{Surface: "mcp", Tool: c.Tool, Client: c.Client}
}

func (m mcpSessions) New(ctx context.Context, c mcpserve.Caller, r mcpserve.NewSessionRequest) (any, error) {
	return orErr(m.pool.Create(ctx, driver.CreateRequest{Story: r.Story, Key: r.Key, ID: r.ID, World: r.World}, audit(c)))
}

func (m mcpSessions) Submit(ctx context.Context, c mcpserve.Caller, ref string, in mcpserve.SessionInput) (any, error) {
	return orErr(m.pool.Submit(ctx, ref, mcpInput(in), audit(c)))
}

// mcpInput is a session tool's input as the session API takes it.
func mcpInput(in mcpserve.SessionInput) driver.Input {
	switch {
	case in.Intent != "":
		return driver.Intent(in.Intent, in.Slots)
	case in.Line != "":
		return driver.Line(in.Line)
	case in.Text != "":
		return driver.Text(in.Text)
	}
	return driver.Raw(in.Raw)
}

func (m mcpSessions) Continue(ctx context.Context, c mcpserve.Caller, ref string) (any, error) {
	return orErr(m.pool.Continue(ctx, ref, audit(c)))
}

func (m mcpSessions) Inspect(ctx context.Context, c mcpserve.Caller, ref string) (any, error) {
	return orErr(m.pool.Inspect(ctx, ref, audit(c)))
}

// Render is the frame as kitsoki run shows it: the view, then the state
// and the intents it accepts.
func (m mcpSessions) Render(ctx context.Context, c mcpserve.Caller, ref string) (string, error) {
	f, err := m.pool.Inspect(ctx, ref, audit(c))
	if err != nil {
		return "", err
	}
	return renderFrame(f), nil
}

// renderFrame is a frame as kitsoki run shows it.
func renderFrame(f *driver.Frame) string {
	var b bytes.Buffer
	if f.View != "" {
		b.WriteString(f.View + "\n")
	}
	if f.ViewError != "" {
		b.WriteString("error: " + f.ViewError + "\n")
	}
	driver.Describe(&b, &driver.Status{State: f.State, Description: f.Description, Intents: f.AllowedIntents})
	if f.Done {
		b.WriteString("(the session is finished)\n")
	}
	return b.String()
}

func (m mcpSessions) Trace(_ context.Context, ref string) ([]byte, error) {
	return m.pool.Sessions.Trace(ref)
}

func (m mcpSessions) List(context.Context) (any, error) {
	all, err := m.pool.Sessions.List()
	if err != nil {
		return nil, err
	}
	if all == nil {
		return []any{}, nil
	}
	return all, nil
}

func (m mcpSessions) Fork(_ context.Context, ref string, at int64) (any, error) {
	return m.pool.Sessions.Fork(ref, at)
}

// Delete closes the session when it is live here, then deletes it.
func (m mcpSessions) Delete(_ context.Context, ref string) (any, error) {
	if err := m.pool.Release(ref); err != nil {
		return nil, err
	}
	meta, kept, err := m.pool.Sessions.Delete(ref)
	if err != nil {
		return nil, err
	}
	if kept != "" {
		return map[string]any{"deleted": meta.ID, "journal_kept": kept}, nil
	}
	return map[string]any{"deleted": meta.ID}, nil
}

// orErr keeps a nil frame out of an interface value.
func orErr(f *driver.Frame, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, errors.New("no frame")
	}
	return f, nil
}
