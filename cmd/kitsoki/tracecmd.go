package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/replay"
)

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Work with run traces",
	}
	cmd.AddCommand(newToCassetteCmd(), newTraceStatusCmd())
	cmd.AddCommand(newTraceShowCmd(), newTraceViewCmd())
	return cmd
}

func newToCassetteCmd() *cobra.Command {
	var out, appID, storyPath string
	cmd := &cobra.Command{
		Use:   "to-cassette <TRACE.jsonl>",
		Short: "Turn a run's trace into a cassette that replays it",
		Long: `Turn a run's trace into a cassette: one episode per host call, in order.

Agent calls become host.agent.<verb> episodes that carry the bound data and an
agent: block describing the exchange (with its agent-action transcript, read
from the transcripts/ sidecar beside the trace, so a replay writes it again);
other host calls match on every argument. Replay it with kitsoki run --cassette, or use it as a flow's
host_cassette. A user who hit a bug can hand the cassette over instead of
their setup.

The cassette goes to stdout, or to -o FILE (.yaml.zst compresses).

A trace kitsoki wrote has its story's secrets masked already. For a trace
from elsewhere, --story APP.yaml masks that story's resolved ${VAR} values
in the cassette too (and gives the app id when --app-id is not set and the
trace's header does not name it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hdr, evs, err := readTraceFile(args[0])
			if err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki trace to-cassette: %s: %w", args[0], err))
			}
			if appID == "" {
				appID = hdr.AppID // a header that names it (sessions since issue 19)
			}
			var opts []cassette.LoadOption
			if storyPath != "" {
				st, err := story.Load(storyPath, story.WithStubbedHosts()) // read for its secrets and id; the trace may come from a flow whose fixtures stubbed handlers
				if err != nil {
					return exitWith(exitLoad, err)
				}
				st.Close()
				opts = append(opts, cassette.WithSecrets(st.Secrets))
				if appID == "" {
					appID = st.App.ID
				}
			}
			dir := filepath.Dir(args[0])
			sidecars := func(ref *trace.TranscriptRef) (*trace.Transcript, error) {
				t, err := trace.ReadTranscript(dir, ref)
				if errors.Is(err, fs.ErrNotExist) {
					// The trace was handed over without its transcripts/:
					// the episode replays without one.
					fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: warning: %v; the episode is written without its transcript\n", err)
					return nil, nil
				}
				return t, err
			}
			c, err := replay.FromTraceWith(evs, appID, sidecars, opts...)
			if err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki trace to-cassette: %s: %w", args[0], err))
			}
			if out != "" {
				if err := c.WriteFile(out); err != nil {
					return exitWith(exitFailure, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: wrote %d episode(s) to %s\n", len(c.Episodes), out)
				return nil
			}
			b, err := c.Encode()
			if err != nil {
				return exitWith(exitFailure, err)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the cassette to this file instead of stdout")
	cmd.Flags().StringVar(&appID, "app-id", "", "the story's app id, used in the cassette's call_ids (default: the one the trace's header names)")
	cmd.Flags().StringVar(&storyPath, "story", "", "mask this story's resolved ${VAR} secrets in the cassette (for traces kitsoki did not write)")
	return cmd
}

// readTraceFile reads a whole trace with its header.
func readTraceFile(path string) (trace.Header, []trace.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return trace.Header{}, nil, err
	}
	defer f.Close()
	return trace.ReadAll(f)
}
