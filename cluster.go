package kitsoki

import (
	"context"
	"errors"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/run/driver"
)

// Cluster is a Temporal cluster that durable sessions live on as
// workflows. Package github.com/kitsoki/kitsoki/cluster dials one
// (cluster.Dial with its address and namespace); WithCluster hands it to
// Resume. This package does not link the Temporal SDK: the cluster
// package does. Only that package implements the interface (its method
// answers with an internal type).
type Cluster interface {
	ResumeSession(ctx context.Context, ref string) (driver.Attached, error)
}

// WithCluster makes Resume find the session on the cluster c instead of
// a sessions directory: ref is the session's key or id (its workflow
// id). The workers of the cluster run its calls with their own agents
// and handlers, on the story bundle the session started with, so the
// options that set how a session runs here (agents, handlers, cassette,
// trace file, sessions directory, world, root, fork, routing, clock,
// timeouts, pins) are refused with it.
func WithCluster(c Cluster) Option { return func(cfg *config) { cfg.cluster = c } }

// clusterRefusal names the first option that does not apply to a
// session on a cluster.
func (c *config) clusterRefusal() error {
	refused := []struct {
		set  bool
		name string
	}{
		{len(c.agents) > 0, "WithAgent/WithInlineAgent"},
		{len(c.handlers) > 0, "WithHandler"},
		{c.cassette != "", "WithCassette"},
		{c.traceFile != "", "WithTraceFile"},
		{c.sessionsDir != "", "WithSessionsDir"},
		{c.sessionID != DefaultSessionID, "WithSessionID"},
		{c.key != "", "WithKey"},
		{c.world != nil, "WithWorld"},
		{c.root != "", "WithRoot"},
		{c.fork, "WithFork"},
		{c.start != nil, "WithStartTime"},
		{c.timeoutSet, "WithAgentTimeout"},
		{c.strictPins, "WithStrictPins"},
		{c.semantic != nil || c.router != "" || c.minConfidence != nil, "WithSemanticRouting/WithRouter/WithMinConfidence"},
	}
	for _, r := range refused {
		if r.set {
			return fmt.Errorf("kitsoki.Resume: %s does not apply with WithCluster: the cluster's workers run the session (their agents, handlers and the story bundle it started with); drop the option, or set it on the workers (kitsoki worker)", r.name)
		}
	}
	return nil
}

// resumeOnCluster reattaches to the session ref names on the cluster.
func resumeOnCluster(ctx context.Context, ref string, cfg *config) (*Session, error) {
	if err := cfg.clusterRefusal(); err != nil {
		return nil, err
	}
	a, err := cfg.cluster.ResumeSession(ctx, ref)
	if err != nil {
		var ee *driver.ExitError
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return nil, fmt.Errorf("kitsoki.Resume: %w", err)
	}
	s := &Session{remote: &remoteRun{d: a}, started: true}
	if err := s.remote.refresh(ctx); err != nil {
		a.Close()
		return nil, fmt.Errorf("kitsoki.Resume: %w", err)
	}
	return s, nil
}

// remoteRun is a session on a cluster this process reattached to: what
// the session's accessors read is its status after the last turn.
type remoteRun struct {
	d  driver.Attached
	st *driver.Status
}

// refresh reads where the session stands.
func (r *remoteRun) refresh(ctx context.Context) error {
	st, err := r.d.Status(ctx)
	if err != nil {
		return err
	}
	r.st = st
	return nil
}

// driver is the session's driver: the local run's, or the cluster's.
func (s *Session) driver() driver.Driver {
	if s.remote != nil {
		return s.remote.d
	}
	return s.rt.d
}

// afterTurn brings a cluster session's status up to date after a turn.
func (s *Session) afterTurn(ctx context.Context) error {
	if s.remote == nil {
		return nil
	}
	return s.remote.refresh(ctx)
}

func intentNames(in []driver.IntentInfo) []string {
	out := make([]string, 0, len(in))
	for _, i := range in {
		out = append(out, i.Name)
	}
	return out
}
