package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/view/evalview"
	"github.com/kitsoki/kitsoki/internal/view/viz"
)

func newVizCmd(g *globals) *cobra.Command {
	var format, out, highlight string
	cmd := &cobra.Command{
		Use:   "viz <app.yaml>",
		Short: "Draw a story's state machine (Mermaid, DOT, SVG or PNG)",
		Long: `Draw a story's state machine: every state with its description and the
handlers its on_enter invokes, every transition labelled with its intent and
guard, on_error redirects dashed, terminal states with a double border, and
nested states as clusters: a compound state with a start point before its
initial child, a parallel state with a sub-cluster per region, an imported
sub-story labelled with its alias and source.

--format mermaid (the default) pastes into Markdown; dot is Graphviz's
language; svg and png are rendered by kitsoki-graphviz, Graphviz compiled to
WebAssembly (no system Graphviz), found beside kitsoki, on PATH or at
$KITSOKI_GRAPHVIZ. Without --format, -o FILE picks it from the extension
(.mmd, .dot/.gv, .svg, .png). png needs -o.

--highlight-trace FILE colours the states a run entered and the
transitions it took (parallel configurations P#leaf|leaf included).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := vizFormat(format, out)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			// Drawing a story runs no handler, so an invoke of one kitsoki
			// does not build (slidey, the IDE link, …) is drawn like any
			// other, as flows load it.
			// A drawing needs no secret: ${VAR}s are not resolved.
			st, err := story.Load(args[0], append(g.storyOpts(), story.WithStubbedHosts(), story.WithoutSecrets())...)
			if err != nil {
				return exitWith(exitLoad, err)
			}
			st.Close()
			gr := viz.FromStory(st)
			if highlight != "" {
				evs, err := trace.ReadFile(highlight)
				if err != nil {
					return exitWith(exitFailure, fmt.Errorf("kitsoki viz: --highlight-trace: %w", err))
				}
				if missing := gr.Highlight(evs); len(missing) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki viz: warning: %s: the run went through states this story does not have: %s (is the trace of another version of the story?)\n",
						highlight, strings.Join(missing, ", "))
				}
			}
			var render viz.RenderFunc
			if f == viz.FormatSVG || f == viz.FormatPNG {
				helper, err := viz.FindHelper()
				if err != nil {
					return exitWith(exitFailure, fmt.Errorf("kitsoki %w", err))
				}
				render = viz.HelperRender(helper)
			}
			b, err := viz.Output(cmd.Context(), gr, f, render)
			if err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki %w", err))
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if err := outfile.WriteFile(out, b); err != nil {
				return exitWith(exitFailure, fmt.Errorf("kitsoki viz: %w", err))
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kitsoki: wrote %s (%s, %d states)\n", out, f, len(st.States))
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "mermaid (default), dot, svg or png")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout (needed for png)")
	cmd.Flags().StringVar(&highlight, "highlight-trace", "", "colour the path the run of this trace took")
	addWorkspaceFlag(cmd, g)
	return cmd
}

// vizFormat is --format, or the one -o's extension names, or mermaid.
func vizFormat(format, out string) (viz.Format, error) {
	if format == "" {
		switch strings.ToLower(filepath.Ext(out)) {
		case ".dot", ".gv":
			format = "dot"
		case ".svg":
			format = "svg"
		case ".png":
			format = "png"
		default:
			format = "mermaid"
		}
	}
	f := viz.Format(strings.ToLower(format))
	known := false
	names := make([]string, 0, 4)
	for _, k := range viz.Formats() {
		names = append(names, string(k))
		known = known || k == f
	}
	if !known {
		return "", fmt.Errorf("kitsoki viz: --format %q: unknown format (one of %s)", format, strings.Join(names, ", "))
	}
	if f == viz.FormatPNG && (out == "" || out == "-") {
		return "", fmt.Errorf("kitsoki viz: --format png writes an image: give -o FILE.png")
	}
	return f, nil
}

// showReportHTML is eval show --html: the report's matrix page.
func showReportHTML(out io.Writer, path string) error {
	if !strings.HasSuffix(path, ".json") {
		return exitWith(exitUsage, fmt.Errorf("kitsoki eval show: --html shows a report (report.json), not %s: run kitsoki eval run first, then show evals/reports/<eval>/latest.json", path))
	}
	r, err := eval.ReadReport(path)
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki eval show: %s: %w", path, err))
	}
	if err := evalview.HTML(out, r); err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki eval show: %w", err))
	}
	return nil
}
