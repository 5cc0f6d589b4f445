package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/driver/remote"
)

// The session commands on a Temporal cluster (session … --temporal) go
// through remote.Sessions, the session API on a cluster: the session is
// a workflow, its id the workflow id (a key is the workflow id itself),
// its story the bundle it started with. The frames are the local ones
// (no events: the trace is on the cluster, session trace writes it).

// workerFlags refuses the flags whose job is the workers' on a cluster.
func workerFlags(cmd *cobra.Command) error {
	for _, name := range []string{"cassette", "agent-timeout", "fork", "resume-side-effects"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return exitWith(exitUsage, fmt.Errorf("--%s does not apply with --temporal: the workers run the session's calls (kitsoki worker --cassette, --agent-timeout)", name))
		}
	}
	return nil
}

// clusterSessions is the session API on the cluster the flags name:
// stories loaded with the workspace flags, packed into the blob store
// (or named in --stories). close disconnects.
func clusterSessions(ctx context.Context, g *globals, tf *temporalFlags, cmd *cobra.Command) (svc *remote.Sessions, closeFn func(), err error) {
	cl, err := tf.dial(ctx, g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return nil, nil, err
	}
	return newClusterSessions(g, tf, cl), cl.Close, nil
}

func newClusterSessions(g *globals, tf *temporalFlags, cl *cluster.Client) *remote.Sessions {
	return &remote.Sessions{
		Client:  cl,
		Stories: &cluster.Stories{Dir: tf.stories, Options: g.storyOpts(), Blobs: tf.blobStore()},
		Load:    func(path string) (*story.Story, error) { return story.Load(path, g.storyOpts()...) },
		Pack: func(path string, st *story.Story) (cluster.StoryRef, error) {
			ref, err := cluster.PackStory(path, st, tf.blobStore(), tf.stories, g.storyOpts()...)
			if err != nil {
				return ref, fmt.Errorf("kitsoki: %w", err)
			}
			return ref, nil
		},
	}
}

// clusterCreate starts a session of the story at path on the cluster.
func (c *sessionCmd) clusterCreate(cmd *cobra.Command, r driver.CreateRequest) error {
	if err := workerFlags(cmd); err != nil {
		return err
	}
	svc, done, err := clusterSessions(cmd.Context(), c.g, &c.tf, cmd)
	if err != nil {
		return err
	}
	defer done()
	f, err := svc.Create(cmd.Context(), r, driver.Audit{})
	if err != nil {
		return c.fail(cmd, r.Key+r.ID, err)
	}
	return c.print(cmd, f)
}

// clusterContinue takes one input in a session on the cluster.
func (c *sessionCmd) clusterContinue(cmd *cobra.Command, ref string, in driver.Input) error {
	if err := workerFlags(cmd); err != nil {
		return err
	}
	svc, done, err := clusterSessions(cmd.Context(), c.g, &c.tf, cmd)
	if err != nil {
		return err
	}
	defer done()
	f, err := svc.Continue(cmd.Context(), ref, in, driver.Audit{})
	if err != nil {
		return c.fail(cmd, ref, err)
	}
	return c.print(cmd, f)
}

// clusterInspect reports where a session on the cluster stands.
func (c *sessionCmd) clusterInspect(cmd *cobra.Command, ref string) (*driver.Frame, error) {
	svc, done, err := clusterSessions(cmd.Context(), c.g, &c.tf, cmd)
	if err != nil {
		return nil, err
	}
	defer done()
	f, err := svc.Inspect(cmd.Context(), ref, driver.Audit{})
	if err != nil {
		return nil, c.fail(cmd, ref, err)
	}
	return f, nil
}

// clusterDelete deletes a session on the cluster: its workflow (a running
// one is terminated) and its history.
func (c *sessionCmd) clusterDelete(cmd *cobra.Command, ref string) error {
	svc, done, err := clusterSessions(cmd.Context(), c.g, &c.tf, cmd)
	if err != nil {
		return err
	}
	defer done()
	if err := svc.Delete(cmd.Context(), ref); err != nil {
		return exitWith(driver.CodeOf(err), fmt.Errorf("kitsoki: %w", err))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: deleted session %s on %s (namespace %s)\n", ref, svc.Client.HostPort(), svc.Client.Namespace())
	return nil
}

// clusterFork forks a running session on the cluster after turn *at (nil:
// its current turn).
func (c *sessionCmd) clusterFork(cmd *cobra.Command, ref string, at *int64, id string) error {
	svc, done, err := clusterSessions(cmd.Context(), c.g, &c.tf, cmd)
	if err != nil {
		return err
	}
	defer done()
	fi, err := svc.Fork(cmd.Context(), ref, at, id)
	if err != nil {
		return exitWith(driver.CodeOf(err), fmt.Errorf("kitsoki: %w", err))
	}
	fmt.Fprintln(cmd.OutOrStdout(), fi.ID)
	fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: forked session %s from turn %d of %s on %s (story %s, bundle %s); continue it with kitsoki session continue %s --temporal %s\n",
		fi.ID, fi.Turn, ref, svc.Client.HostPort(), fi.Story.Path, orDefault(fi.Story.Bundle, "none"), fi.ID, svc.Client.HostPort())
	return nil
}

// clusterPrune deletes the sessions on the cluster idle for longer than
// older (remote.Sessions.Prune says what idle is).
func (c *sessionCmd) clusterPrune(cmd *cobra.Command, older time.Duration, dry bool) error {
	svc, done, err := clusterSessions(cmd.Context(), c.g, &c.tf, cmd)
	if err != nil {
		return err
	}
	defer done()
	res, err := svc.Prune(cmd.Context(), older, time.Now(), dry)
	for _, si := range res.Deleted {
		fmt.Fprintln(cmd.OutOrStdout(), si.ID)
	}
	for _, si := range res.Skipped {
		fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: session %s is running but where it stands could not be read (%s); left\n", si.ID, orDefault(si.Error, "no status"))
	}
	if err != nil {
		return exitWith(driver.CodeOf(err), fmt.Errorf("kitsoki: %w", err))
	}
	if !dry {
		fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: pruned %d session(s) idle for more than %s from namespace %s on %s\n", len(res.Deleted), older, svc.Client.Namespace(), svc.Client.HostPort())
	}
	return nil
}
