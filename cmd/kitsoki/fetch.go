package main

import (
	"fmt"

	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/spf13/cobra"
)

// newFetchCmd pre-warms the local-model cache with the same fetch-and-verify
// code managed local_llm agents use on their first call.
func newFetchCmd(g *globals) *cobra.Command {
	var cacheDir string
	opts := func(cmd *cobra.Command) localllm.Options {
		return localllm.Options{CacheDir: cacheDir, Progress: cmd.ErrOrStderr(), Logger: g.logger(cmd.ErrOrStderr())}
	}
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Download and verify llama-server and model files into the local cache",
		Long: `Download the pinned llama-server release and model GGUF files into the cache
(--cache-dir, else $KITSOKI_CACHE_DIR, else the user cache directory), verifying
each file's sha256. Files already cached and verified are not downloaded again;
an interrupted download resumes.`,
	}
	cmd.PersistentFlags().StringVar(&cacheDir, "cache-dir", "", "cache directory")
	server := &cobra.Command{
		Use:   "llama-server",
		Short: "Fetch the pinned llama-server release for this platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := localllm.FetchServer(cmd.Context(), opts(cmd))
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), p)
			return nil
		},
	}
	model := &cobra.Command{
		Use:   "model [ID...]",
		Short: "Fetch model files by id (none: the default chat model)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{""}
			}
			for _, id := range args {
				p, err := localllm.FetchModel(cmd.Context(), id, opts(cmd))
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	models := &cobra.Command{
		Use:   "models",
		Short: "Fetch every pinned model",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, id := range localllm.ModelIDs(opts(cmd)) {
				p, err := localllm.FetchModel(cmd.Context(), id, opts(cmd))
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	cmd.AddCommand(server, model, models)
	return cmd
}
