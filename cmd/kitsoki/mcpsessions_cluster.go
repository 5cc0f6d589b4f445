package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/driver/remote"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
)

// mcpClusterSessions backs the MCP session tools with the session API on
// a Temporal cluster (kitsoki mcp serve --temporal): every call goes to
// the cluster, through remote.Sessions, as kitsoki session … --temporal
// does. Nothing is held live here (the workflow is the live session), so
// continue reattaches and reports (outcome "resumed"). The calls a local
// Pool writes into a session's trace (new, submit, continue, inspect,
// render) are written into the workflow's trace with the same event
// (driver.KindAPICall, cluster.KindAPICall) and payload: new in the
// session's input, submit in its intent update, the others in an audit
// update. Every call is also logged. A call the session's closed workflow
// refuses cannot be written into its trace (a closed history takes
// nothing more), so it is logged as a warning instead (closedWarning).
type mcpClusterSessions struct {
	svc    *remote.Sessions
	logger *slog.Logger
}

var _ mcpserve.Sessions = mcpClusterSessions{}

func (m mcpClusterSessions) log(c mcpserve.Caller, ref string) {
	m.logger.Info("mcp session tool on the cluster", "tool", c.Tool, "client", c.Client, "session", ref)
}

// refused logs, as a warning, a call err says the session's closed
// workflow refused: the call is not in the session's trace, so the
// server's log is its only record. It returns err.
func (m mcpClusterSessions) refused(c mcpserve.Caller, ref string, err error) error {
	if _, closed := errors.AsType[*cluster.ClosedError](err); closed {
		m.logger.Warn("mcp session tool refused: the session's workflow has closed, so the call is not in its trace",
			"tool", c.Tool, "client", c.Client, "session", ref, "error", err.Error())
	}
	return err
}

func (m mcpClusterSessions) New(ctx context.Context, c mcpserve.Caller, r mcpserve.NewSessionRequest) (any, error) {
	m.log(c, r.Key+r.ID)
	return orErr(m.svc.Create(ctx, driver.CreateRequest{Story: r.Story, Key: r.Key, ID: r.ID, World: r.World}, audit(c)))
}

func (m mcpClusterSessions) Submit(ctx context.Context, c mcpserve.Caller, ref string, in mcpserve.SessionInput) (any, error) {
	m.log(c, ref)
	f, err := m.svc.Continue(ctx, ref, mcpInput(in), audit(c))
	return orErr(f, m.refused(c, ref, err))
}

// Continue reattaches (waiting for a turn that runs) and reports where
// the session stands, outcome "resumed".
func (m mcpClusterSessions) Continue(ctx context.Context, c mcpserve.Caller, ref string) (any, error) {
	m.log(c, ref)
	f, err := m.svc.Resume(ctx, ref, audit(c))
	return orErr(f, m.refused(c, ref, err))
}

func (m mcpClusterSessions) Inspect(ctx context.Context, c mcpserve.Caller, ref string) (any, error) {
	m.log(c, ref)
	f, err := m.svc.Inspect(ctx, ref, audit(c))
	return orErr(f, m.refused(c, ref, err))
}

func (m mcpClusterSessions) Render(ctx context.Context, c mcpserve.Caller, ref string) (string, error) {
	m.log(c, ref)
	f, err := m.svc.Inspect(ctx, ref, audit(c))
	if err != nil {
		return "", m.refused(c, ref, err)
	}
	return renderFrame(f), nil
}

func (m mcpClusterSessions) Trace(ctx context.Context, ref string) ([]byte, error) {
	return m.svc.Trace(ctx, ref)
}

func (m mcpClusterSessions) List(ctx context.Context) (any, error) {
	all, err := m.svc.List(ctx)
	if err != nil {
		return nil, err
	}
	if all == nil {
		return []any{}, nil
	}
	return all, nil
}

func (m mcpClusterSessions) Fork(ctx context.Context, ref string, at int64) (any, error) {
	fi, err := m.svc.Fork(ctx, ref, &at, "")
	if err != nil {
		return nil, err
	}
	return fi, nil
}

func (m mcpClusterSessions) Delete(ctx context.Context, ref string) (any, error) {
	if err := m.svc.Delete(ctx, ref); err != nil {
		return nil, err
	}
	return map[string]any{"deleted": ref}, nil
}
