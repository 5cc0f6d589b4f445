package main

import (
	"errors"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/spf13/cobra"
)

func newValidateCmd(g *globals) *cobra.Command {
	var strictPins bool
	cmd := &cobra.Command{
		Use:   "validate <app.yaml>",
		Short: "Load a story and report every error in it",
		Long: `Load a story (with its includes, prompt files and schemas) and report every
load error as file:line:col: key.path: message. Warnings are printed too.

Invokes whose selection: pins a model are checked against their eval
evidence; a pin that cannot be honoured is a warning, or with --strict-pins
a load error.

Exit codes: 0 the story loads, 2 it does not.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := story.Load(args[0], story.WithWorkspace(g.workspace))
			if err != nil {
				var le *story.LoadError
				if errors.As(err, &le) {
					for _, w := range le.Warnings {
						fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w.String())
					}
					if n := len(le.Diagnostics); n > 1 {
						err = fmt.Errorf("%w\n%d errors", err, n)
					}
				}
				return exitWith(exitLoad, err)
			}
			for _, w := range st.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w.String())
			}
			if _, err := applyPins(st, cmd.ErrOrStderr(), strictPins); err != nil {
				return exitWith(exitLoad, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d states, %d intents, %d agent plugins)\n",
				args[0], len(st.States), len(st.Intents), len(st.Plugins))
			return nil
		},
	}
	cmd.Flags().BoolVar(&strictPins, "strict-pins", false, "fail when a selection: pin's evidence is missing, stale or failing")
	addWorkspaceFlag(cmd, g)
	return cmd
}
