package main

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/docs"
	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"github.com/kitsoki/kitsoki/schemas"
)

// llmGuideTopic is the guide for a model writing stories; kitsoki docs
// prints the JSON Schemas of llmGuideSchemas after it.
const llmGuideTopic = "llm-guide"

// llmGuideSchemas are the schemas of the files a story's author writes.
var llmGuideSchemas = []string{"app", "flow", "cassette"}

// schemaPrefix names a JSON Schema as a topic: schemas/app.
const schemaPrefix = "schemas/"

func newDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "docs [TOPIC]",
		Short: "Print kitsoki's documentation (kitsoki docs lists the topics)",
		Long: `Print a page of kitsoki's documentation, as Markdown: the pages of docs/,
built into the binary. Without TOPIC, list the topics with their titles.

A topic is a page's path under docs/ without .md (stories, agents/claude), a
folder (views: its README), or a page's last element when only one page has
it (claude). schemas/NAME prints a
JSON Schema of kitsoki's file formats (schemas/app, schemas/flow, ...).

kitsoki docs llm-guide is written for a language model that writes stories:
the story format condensed, then the JSON Schemas of a story, a flow and a
cassette. Paste it into the model's context, or pipe it there.

Exit codes: 0 printed, 2 no such topic (with the nearest one).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if len(args) == 0 {
				return listTopics(w)
			}
			return printTopic(w, args[0])
		},
	}
}

// listTopics prints every topic with its title.
func listTopics(w io.Writer) error {
	fmt.Fprintln(w, "kitsoki's documentation: kitsoki docs TOPIC prints a page.")
	fmt.Fprintln(w, "\nStart with: tutorial (a first story in 15 minutes), llm-guide (for a model writing stories).")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range docs.Pages() {
		fmt.Fprintf(tw, "  %s\t%s\n", p.Topic, p.Title)
	}
	for _, n := range schemas.Names() {
		fmt.Fprintf(tw, "  %s%s\tJSON Schema (schemas/%s.schema.json)\n", schemaPrefix, n, n)
	}
	return tw.Flush()
}

// printTopic prints one topic; a topic that names nothing is a usage
// error with the nearest topic.
func printTopic(w io.Writer, topic string) error {
	topic = strings.TrimSuffix(strings.TrimPrefix(topic, "docs/"), ".md")
	if n, ok := strings.CutPrefix(topic, schemaPrefix); ok {
		data, err := schemas.Read(strings.TrimSuffix(n, ".schema.json"))
		if err != nil {
			return unknownTopic(topic)
		}
		_, err = w.Write(data)
		return err
	}
	name, ok := resolveTopic(topic)
	if !ok {
		return unknownTopic(topic)
	}
	data, err := docs.Read(name)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if name == llmGuideTopic {
		return writeGuideSchemas(w)
	}
	return nil
}

// resolveTopic finds the page a topic names: its path, a folder's README,
// or a last element only one page has.
func resolveTopic(topic string) (string, bool) {
	var byBase []string
	for _, p := range docs.Pages() {
		if p.Topic == topic || p.Topic == topic+"/README" {
			return p.Topic, true
		}
		if path.Base(p.Topic) == topic {
			byBase = append(byBase, p.Topic)
		}
	}
	if len(byBase) == 1 {
		return byBase[0], true
	}
	return "", false
}

// unknownTopic is the error for a topic that names nothing.
func unknownTopic(topic string) error {
	var names []string
	for _, p := range docs.Pages() {
		names = append(names, p.Topic, path.Base(p.Topic))
	}
	for _, n := range schemas.Names() {
		names = append(names, schemaPrefix+n)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	msg := fmt.Sprintf("kitsoki docs: no topic %q", topic)
	if s := nearmiss.Closest(topic, names, 3); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return exitWith(exitUsage, errors.New(msg+"; kitsoki docs lists the topics"))
}

// writeGuideSchemas appends the JSON Schemas of the files a story's
// author writes to the LLM guide.
func writeGuideSchemas(w io.Writer) error {
	fmt.Fprintln(w, "\n## Appendix: the JSON Schemas")
	fmt.Fprintln(w, "\nThe shapes kitsoki's loader accepts, generated from its own key lists. They check")
	fmt.Fprintln(w, "keys and shapes; `kitsoki validate` checks the rest (expressions, targets, types).")
	for _, n := range llmGuideSchemas {
		data, err := schemas.Read(n)
		if err != nil {
			return exitWith(exitFailure, err)
		}
		fmt.Fprintf(w, "\n### schemas/%s.schema.json\n\n```json\n%s", n, data)
		if !strings.HasSuffix(string(data), "\n") {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, "```")
	}
	return nil
}
