// Package docs holds kitsoki's documentation, the Markdown files beside
// this one, embedded in the binary so that `kitsoki docs` prints them
// wherever kitsoki is installed.
package docs

import (
	"bufio"
	"bytes"
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// files are the pages. A new folder of pages goes here too
// (TestEveryPageIsEmbedded fails until it does).
//
//go:embed *.md agents/*.md tracing/*.md views/*.md
var files embed.FS

// Page is one documentation page.
type Page struct {
	Topic string // its name for kitsoki docs: the path without .md ("stories", "agents/claude")
	File  string // its path under docs/
	Title string // its first heading
}

// Pages lists every page, sorted by topic.
func Pages() []Page {
	var out []Page
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".md" {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, Page{Topic: strings.TrimSuffix(p, ".md"), File: p, Title: title(data)})
		return nil
	})
	slices.SortFunc(out, func(a, b Page) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

// Read returns the page of a topic ("stories", "agents/claude").
func Read(topic string) ([]byte, error) {
	return files.ReadFile(topic + ".md")
}

// title is the text of a page's first heading.
func title(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if t, ok := strings.CutPrefix(sc.Text(), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}
