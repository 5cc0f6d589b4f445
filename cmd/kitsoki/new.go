package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// templates holds the stories `kitsoki new` writes, one directory each.
// In their files __APP_ID__ and __TITLE__ stand for the new story's id and
// title, and a file named gitignore is written as .gitignore.
//
//go:embed templates
var templates embed.FS

// templateNames are the templates, the default first.
var templateNames = []string{"agent", "chat", "pipeline"}

// templateSummaries say what each template is, for --help and the output.
var templateSummaries = map[string]string{
	"agent":    "one agent decision: a note in, a typed verdict out",
	"chat":     "a conversation: free text to an agent and back, no router needed",
	"pipeline": "steps with nobody in the loop: a program, then an agent, then a report",
}

// appIDPattern is what a new story's id (its directory's name) may be.
var appIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

func newNewCmd() *cobra.Command {
	var tmpl string
	var lines []string
	for _, n := range templateNames {
		lines = append(lines, fmt.Sprintf("  %-9s %s", n, templateSummaries[n]))
	}
	cmd := &cobra.Command{
		Use:   "new NAME [--template agent|chat|pipeline]",
		Short: "Write a new story directory whose flow and cassette pass at once",
		Long: `Write a new story in the directory NAME (created; it must not exist, or be
empty): app.yaml, a prompt, a JSON Schema, a scripted stand-in agent
(agents/stand_in.py, run with python3), a flow under flows/ and the cassette
it replays, and a README saying how to put a real model in the stand-in's
place. kitsoki validate, kitsoki test flows and kitsoki run --cassette pass
in it straight away, with no model and no network.

The story's id is NAME's last element (lower-case letters, digits, - and _,
starting with a letter); its title is made from it.

Templates:
` + strings.Join(lines, "\n"),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(templateNames, tmpl) {
				return exitWith(exitUsage, fmt.Errorf("kitsoki new: --template %q: unknown template (one of %s)", tmpl, strings.Join(templateNames, ", ")))
			}
			files, err := scaffold(args[0], tmpl)
			if err != nil {
				return exitWith(exitFailure, err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "wrote %s (template %s: %s):\n", args[0], tmpl, templateSummaries[tmpl])
			for _, f := range files {
				fmt.Fprintf(w, "  %s\n", f)
			}
			fmt.Fprintf(w, "next:\n  cd %s\n", args[0])
			fmt.Fprintln(w, "  kitsoki test flows .    the flow, replayed from its cassette (no model)")
			fmt.Fprintln(w, "  kitsoki run .           the terminal UI (README.md says more)")
			return nil
		},
	}
	cmd.Flags().StringVar(&tmpl, "template", templateNames[0], "the kind of story: "+strings.Join(templateNames, ", "))
	return cmd
}

// scaffold writes template tmpl as a new story in dir and returns the
// files written, relative to dir, in order.
func scaffold(dir, tmpl string) ([]string, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("kitsoki new: %s already exists and is not empty: pick another name, or remove it first", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("kitsoki new: %w", err)
	}
	id := filepath.Base(filepath.Clean(dir))
	if !appIDPattern.MatchString(id) {
		return nil, fmt.Errorf("kitsoki new: %q cannot be a story id (lower-case letters, digits, - and _, starting with a letter): pick a name like %q", id, suggestID(id))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kitsoki new: %w", err)
	}
	root := path.Join("templates", tmpl)
	r := strings.NewReplacer("__APP_ID__", id, "__TITLE__", titleOf(id))
	var written []string
	err := fs.WalkDir(templates, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := templates.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		if path.Base(rel) == "gitignore" {
			rel = path.Join(path.Dir(rel), ".gitignore")
		}
		out := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(r.Replace(string(data))); err != nil {
			f.Close()
			return err
		}
		written = append(written, rel)
		return f.Close()
	})
	if err != nil {
		return nil, fmt.Errorf("kitsoki new: %w", err)
	}
	return written, nil
}

// titleOf makes a title of an id: "bug-triage" gives "Bug triage".
func titleOf(id string) string {
	t := strings.NewReplacer("-", " ", "_", " ").Replace(id)
	return strings.ToUpper(t[:1]) + t[1:]
}

// suggestID turns a name that cannot be an id into one that can.
func suggestID(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ' || r == '.':
			b.WriteRune('-')
		}
	}
	s := strings.Trim(b.String(), "-_")
	for s != "" && !(s[0] >= 'a' && s[0] <= 'z') {
		s = s[1:]
	}
	if s == "" {
		return "my-story"
	}
	return s
}
