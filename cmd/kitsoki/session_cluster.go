package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/driver/remote"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// The session API on a Temporal cluster (session create/continue/inspect
// --temporal): the session is a workflow, its id the workflow id (a key
// is the workflow id itself, so finding a session by its key is one
// describe), its story the bundle it started with. The frames are the
// local ones (no events: the trace is on the cluster, session trace
// writes it). Updates to one workflow are taken one at a time by
// Temporal, so a second continue waits for the first instead of being
// refused busy.

// workerFlags refuses the flags whose job is the workers' on a cluster.
func workerFlags(cmd *cobra.Command) error {
	for _, name := range []string{"cassette", "agent-timeout", "fork", "resume-side-effects"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return exitWith(exitUsage, fmt.Errorf("--%s does not apply with --temporal: the workers run the session's calls (kitsoki worker --cassette, --agent-timeout)", name))
		}
	}
	return nil
}

// clusterCreate starts a session of the story at path on the cluster.
func (c *sessionCmd) clusterCreate(cmd *cobra.Command, path, key, id string, world map[string]any, root string) error {
	if err := workerFlags(cmd); err != nil {
		return err
	}
	if key != "" && id != "" {
		return exitWith(exitUsage, errors.New("kitsoki session create --temporal: give --key or --session, not both (a key is the session's workflow id)"))
	}
	if key != "" {
		if err := session.CheckKey(key); err != nil {
			return exitWith(exitUsage, err)
		}
		id = key
	}
	st, err := story.Load(path, c.g.storyOpts()...)
	if err != nil {
		return exitWith(exitLoad, err)
	}
	defer st.Close()
	ctx := cmd.Context()
	cl, err := c.tf.dial(ctx, c.g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if id != "" {
		if _, err := cl.Describe(ctx, id); err == nil {
			return c.fail(cmd, id, driver.Exit(exitFailure, fmt.Errorf("session %s exists on the cluster; continue it (kitsoki session continue %s --temporal …)", id, id)))
		}
	}
	ref, err := cluster.PackStory(path, st, c.tf.blobStore(), c.tf.stories, c.g.storyOpts()...)
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	d, err := remote.Open(ctx, cl, remote.Request{Story: st, Ref: ref, ID: id, World: world, Root: root, Stderr: io.Discard})
	if err != nil {
		return c.fail(cmd, id, err)
	}
	defer d.Close()
	out, _ := d.Begin(ctx)
	return c.clusterFrame(cmd, d, ref, key, out, "started")
}

// clusterOpen reattaches to the session ref names, its story read from
// its bundle (or this client's --stories for one without).
func (c *sessionCmd) clusterOpen(ctx context.Context, cl *cluster.Client, ref string) (*remote.Driver, cluster.StoryRef, error) {
	si, err := cl.Describe(ctx, ref)
	if err != nil {
		return nil, cluster.StoryRef{}, driver.Exit(exitFailure, err)
	}
	stories := &cluster.Stories{Dir: c.tf.stories, Options: c.g.storyOpts(), Blobs: c.tf.blobStore()}
	st, err := stories.Load(si.Story)
	if err != nil {
		return nil, si.Story, driver.Exit(exitFailure, err)
	}
	d, err := remote.Open(ctx, cl, remote.Request{Story: st, Ref: si.Story, ID: si.ID, Stderr: io.Discard})
	if err != nil {
		return nil, si.Story, err
	}
	return d, si.Story, nil
}

// clusterContinue takes one input in a session on the cluster.
func (c *sessionCmd) clusterContinue(cmd *cobra.Command, ref string, in driver.Input) error {
	if err := workerFlags(cmd); err != nil {
		return err
	}
	ctx := cmd.Context()
	cl, err := c.tf.dial(ctx, c.g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer cl.Close()
	d, sref, err := c.clusterOpen(ctx, cl, ref)
	if err != nil {
		return c.fail(cmd, ref, err)
	}
	defer d.Close()
	out, err := d.Take(ctx, in)
	if ie, ok := errors.AsType[*driver.InputError](err); ok {
		return c.fail(cmd, ref, driver.Exit(exitRejected, ie))
	}
	if err != nil {
		return c.fail(cmd, ref, err)
	}
	return c.clusterFrame(cmd, d, sref, keyOf(ref), out, out.Outcome)
}

// clusterInspect reports where a session on the cluster stands.
func (c *sessionCmd) clusterInspect(cmd *cobra.Command, ref string) error {
	ctx := cmd.Context()
	cl, err := c.tf.dial(ctx, c.g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer cl.Close()
	d, sref, err := c.clusterOpen(ctx, cl, ref)
	if err != nil {
		return c.fail(cmd, ref, err)
	}
	defer d.Close()
	return c.clusterFrame(cmd, d, sref, keyOf(ref), nil, "status")
}

func (c *sessionCmd) clusterFrame(cmd *cobra.Command, d *remote.Driver, ref cluster.StoryRef, key string, out *orchestrator.Outcome, outcome string) error {
	st, err := d.Status(cmd.Context())
	if err != nil {
		return c.fail(cmd, d.ID(), err)
	}
	m := session.Meta{ID: d.ID(), Key: key, AppID: d.Story().App.ID, Story: ref.Path, StoryHash: ref.Hash}
	f := driver.NewFrame(m, st, out, outcome, nil)
	f.Mask(secret.New(d.Story().Secrets))
	return c.print(cmd, f)
}

func keyOf(ref string) string {
	if session.IsKey(ref) {
		return ref
	}
	return ""
}

// clusterDelete deletes a session on the cluster: its workflow (a running
// one is terminated) and its history.
func (c *sessionCmd) clusterDelete(cmd *cobra.Command, ref string) error {
	ctx := cmd.Context()
	cl, err := c.tf.dial(ctx, c.g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Delete(ctx, ref); err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: deleted session %s on %s (namespace %s)\n", ref, cl.HostPort(), cl.Namespace())
	return nil
}
