package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/hostplugin"
	"github.com/kitsoki/kitsoki/internal/load/project"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/spf13/cobra"
)

func newValidateCmd(g *globals) *cobra.Command {
	var strictPins, strict bool
	cmd := &cobra.Command{
		Use:   "validate <app.yaml>",
		Short: "Load a story and report every error in it",
		Long: `Load a story (with its includes, prompt files and schemas) and report every
load error as file:line:col: key.path: message. Warnings are printed too.

Invokes whose selection: pins a model are checked against their eval
evidence; a pin that cannot be honoured is a warning, or with --strict-pins
a load error.

With --strict every warning is an error: a guard that reads a world key
world: does not declare, an arm that is never tried, an unknown world type...

Each host_plugins: program is started once and asked host.describe; the
story's calls of it are checked against the ops it lists.

Exit codes: 0 the story loads, 2 it does not (or, with --strict, has warnings).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := story.Load(args[0], g.storyOpts()...)
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
			if strict && len(st.Warnings) > 0 {
				st.Close()
				return exitWith(exitLoad, strictErr(st.Warnings))
			}
			for _, w := range st.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w.String())
			}
			if _, err := applyPins(st, cmd.ErrOrStderr(), strictPins); err != nil {
				return exitWith(exitLoad, err)
			}
			if err := checkHostPlugins(cmd.Context(), st, g.logger(cmd.ErrOrStderr()), cmd.ErrOrStderr(), strict); err != nil {
				return exitWith(exitLoad, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%s)\n", args[0], storyCounts(st))
			writeAgentPlugins(cmd.OutOrStdout(), st)
			writeProfiles(cmd.OutOrStdout(), g.project, st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&strictPins, "strict-pins", false, "fail when a selection: pin's evidence is missing, stale or failing")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail when the story has warnings (a guard reading an undeclared world key, ...)")
	addWorkspaceFlag(cmd, g)
	return cmd
}

// injectedNote marks, in validate's list, the agent.claude the loader adds
// to a story that declares none: every story has it (it is the default
// free-text router), though no file of the story names it.
const injectedNote = "(default: added by kitsoki, not declared in the story)"

// writeAgentPlugins lists the story's agents, one line each: alias,
// plugin type, and model when it names one.
func writeAgentPlugins(w io.Writer, st *story.Story) {
	aliases := make([]string, 0, len(st.Plugins))
	for a := range st.Plugins {
		aliases = append(aliases, a)
	}
	slices.Sort(aliases)
	for _, a := range aliases {
		d := st.Plugins[a]
		line := "  " + a + "  " + d.Plugin
		if d.Model != "" {
			line += "  model " + d.Model
		}
		if !d.Enabled {
			line += "  (disabled)"
		}
		if a == agent.DefaultAlias && st.DefaultPluginInjected {
			line += "  " + injectedNote
		}
		fmt.Fprintln(w, line)
	}
}

// writeProfiles lists the .kitsoki.yaml profiles a run of st could take:
// name, plugin type and model, or why one would not resolve (a variable
// of its env: not set).
func writeProfiles(w io.Writer, cfg *project.Config, st *story.Story) {
	if cfg == nil || len(cfg.Profiles) == 0 {
		return
	}
	names := make([]string, 0, len(cfg.Profiles))
	for n := range cfg.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(w, "profiles (%s):\n", cfg.Path)
	for _, n := range names {
		r, err := cfg.Profiles[n].Resolve(st.Dir, os.LookupEnv)
		switch {
		case err != nil:
			fmt.Fprintf(w, "  %s  not usable: %v\n", n, err)
		case r.Decl.Model != "":
			fmt.Fprintf(w, "  %s  %s  model %s\n", n, r.Decl.Plugin, r.Decl.Model)
		default:
			fmt.Fprintf(w, "  %s  %s\n", n, r.Decl.Plugin)
		}
	}
}

// strictErr reports warnings as the errors --strict makes them: one line
// each, then how many.
func strictErr(ws []story.Diagnostic) error {
	lines := make([]string, 0, len(ws)+1)
	for _, w := range ws {
		lines = append(lines, w.String())
	}
	lines = append(lines, fmt.Sprintf("%d warnings, which are errors with --strict", len(ws)))
	if len(ws) == 1 {
		lines[len(lines)-1] = "1 warning, which is an error with --strict"
	}
	return errors.New(strings.Join(lines, "\n"))
}

// checkHostPlugins checks the story's calls of its host plugins against
// what each one's host.describe lists (hostplugin.Check).
// Its warnings are printed, or with strict are errors too.
func checkHostPlugins(ctx context.Context, st *story.Story, logger *slog.Logger, stderr io.Writer, strict bool) error {
	diags, warns := hostplugin.Check(ctx, st, hostplugin.Options{Logger: logger})
	if strict {
		diags = append(diags, warns...)
	} else {
		for _, w := range warns {
			fmt.Fprintf(stderr, "warning: %s\n", w.String())
		}
	}
	if len(diags) == 0 {
		return nil
	}
	var err error = &story.LoadError{Diagnostics: diags}
	if len(diags) > 1 {
		err = fmt.Errorf("%w\n%d errors", err, len(diags))
	}
	return err
}

// storyCounts is validate's summary of a story: its states, intents and
// the agent plugins listed below it (writeAgentPlugins), the agent.claude
// the loader adds when the story declares none included, so that the
// count and the list agree (docs/stories.md).
func storyCounts(st *story.Story) string {
	return fmt.Sprintf("%s, %s, %s", count(len(st.States), "state"), count(len(st.Intents), "intent"), count(len(st.Plugins), "agent plugin"))
}

// count is "1 thing" or "N things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
