package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kitsoki/kitsoki/internal/hosts/catalog"
	"github.com/spf13/cobra"
)

func newHostsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hosts",
		Short: "List the invoke handlers kitsoki provides: name, with: fields, result fields",
		Long: "List every invoke handler kitsoki provides with its with: fields and the result fields bind: reads,\n" +
			"then the handlers kitsoki knows of but does not build (a story invoking one is refused at load\n" +
			"unless a host plugin serves it). See docs/hosts.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeHosts(cmd.OutOrStdout())
		},
	}
}

// writeHosts prints the handler table of internal/hosts/catalog.
func writeHosts(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range catalog.Builtins() {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Summary)
		writeFields(tw, "with", s.Fields)
		writeFields(tw, "returns", s.Results)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "not built (refused at load unless a host plugin serves them):")
	for _, u := range catalog.Unbuilts() {
		fmt.Fprintf(tw, "  %s, %s.*\tneeds %s\n", u.Name, u.Name, u.Needs)
	}
	return tw.Flush()
}

func writeFields(w io.Writer, label string, fs []catalog.Field) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", label)
	for _, f := range fs {
		var notes []string
		if f.Required {
			notes = append(notes, "required")
		}
		if f.Doc != "" {
			notes = append(notes, f.Doc)
		}
		if len(notes) == 0 {
			fmt.Fprintf(w, "    %s\t%s\n", f.Name, f.Type)
			continue
		}
		fmt.Fprintf(w, "    %s\t%s\t%s\n", f.Name, f.Type, strings.Join(notes, "; "))
	}
}
