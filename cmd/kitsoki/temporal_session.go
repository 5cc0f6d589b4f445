package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
)

// The kitsoki session commands against a cluster (--temporal): the same
// output as the local ones, read from the cluster's visibility and the
// sessions' queries.

func sessionListCluster(cmd *cobra.Command, g *globals, tf *temporalFlags) error {
	c, err := tf.dial(cmd.Context(), g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer c.Close()
	all, err := c.List(cmd.Context())
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	if len(all) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: no sessions in namespace %s at %s\n", c.Namespace(), c.HostPort())
		return nil
	}
	w := cmd.OutOrStdout()
	fmt.Fprintln(w, "ID\tSTORY\tSTATE\tTURN\tLAST ACTIVITY\tFINISHED\tCOST")
	for _, si := range all {
		if si.Error != "" && si.Running() {
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: warning: %s\n", si.Error)
		}
		fin := "no"
		switch {
		case si.Done:
			fin = "yes"
		case !si.Running():
			fin = si.Status // failed, terminated, ...: not running, not finished
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t$%.4f\n", si.ID, clusterStoryName(si), orDefault(si.State, "-"), si.Turn,
			si.Updated.UTC().Format(time.RFC3339), fin, costUSD(si.World.Map()))
	}
	return nil
}

func clusterStoryName(si cluster.SessionInfo) string {
	if si.AppID != "" {
		return si.AppID
	}
	return orDefault(si.Story.Path, "-")
}

func costUSD(w map[string]any) float64 {
	switch c := w["session_cost_usd"].(type) {
	case float64:
		return c
	case int64:
		return float64(c)
	case int:
		return float64(c)
	case json.Number:
		f, _ := c.Float64()
		return f
	}
	return 0
}

func sessionShowCluster(cmd *cobra.Command, g *globals, tf *temporalFlags, id string, asJSON bool) error {
	c, err := tf.dial(cmd.Context(), g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer c.Close()
	si, err := c.Describe(cmd.Context(), id)
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	if !asJSON {
		if err := clusterShowText(si, c.Namespace()).write(cmd.OutOrStdout()); err != nil {
			return exitWith(exitFailure, err)
		}
		return nil
	}
	sess := map[string]any{"id": si.ID, "run_id": si.RunID, "status": si.Status, "story": si.Story, "app_id": si.AppID,
		"namespace": c.Namespace(), "task_queue": si.TaskQueue, "started": si.Started, "updated": si.Updated}
	if !si.Closed.IsZero() {
		sess["closed"] = si.Closed
	}
	out := map[string]any{"session": sess}
	if si.Error != "" {
		out["error"] = si.Error
	}
	if si.State != "" {
		st := map[string]any{"state": si.State, "turn": si.Turn, "world": orEmpty(si.World.Map()), "finished": si.Done}
		if si.Exit != "" {
			st["exit"] = si.Exit
		}
		allowed := []string{}
		if si.Allowed != nil {
			allowed = si.Allowed
		}
		st["allowed_intents"] = allowed
		out["workflow"] = st
	}
	return printShowJSON(cmd.OutOrStdout(), out)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// sessionTraceCluster writes the session's JSONL trace to out ("" or "-"
// is stdout).
func sessionTraceCluster(cmd *cobra.Command, g *globals, tf *temporalFlags, id, out string) error {
	c, err := tf.dial(cmd.Context(), g.logger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer c.Close()
	b, err := c.TraceJSONL(cmd.Context(), id)
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	return writeTraceOut(cmd.OutOrStdout(), cmd.ErrOrStderr(), out, b, id)
}

// writeTraceOut writes a trace to the file out (mode 0600: traces hold
// prompts and answers), or to stdout.
func writeTraceOut(stdout, stderr io.Writer, out string, b []byte, id string) error {
	if out == "" || out == "-" {
		_, err := stdout.Write(b)
		if err != nil {
			return exitWith(exitFailure, err)
		}
		return nil
	}
	if err := outfile.WriteFile(out, b); err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	fmt.Fprintf(stderr, "kitsoki: wrote the trace of session %s to %s\n", id, out)
	return nil
}
