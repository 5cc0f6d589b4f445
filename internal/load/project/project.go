// Package project reads a project's .kitsoki.yaml, as Kitsoki reads it:
// the checked-in file in the working directory, with a .kitsoki.local.yaml
// beside it (personal, not checked in) merged over it, the local file
// winning. Every key of Kitsoki's file is read; a key kitsoki does not
// act on is refused with the reason, and an unknown key gets a
// did-you-mean. Config is the typed result; new blocks are added as a
// field, a key in Keys, and a reader in readers.
package project

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
)

// File and LocalFile are the names Load looks for.
const (
	File      = ".kitsoki.yaml"
	LocalFile = ".kitsoki.local.yaml"
)

// Config is a project's configuration.
type Config struct {
	// Path is the .kitsoki.yaml read ("" when there is none).
	Path string
	// StoryDirs are the directories holding stories (NAME/app.yaml),
	// absolute: where @kitsoki/NAME imports are looked up after
	// --stories-path, KITSOKI_STORIES_PATH and $KITSOKI_REPO/stories.
	// Relative entries are taken from the file's directory.
	StoryDirs []string
}

// Keys are the top-level keys of Kitsoki's .kitsoki.yaml.
var Keys = []string{"story_dirs", "harness_profiles", "default_profile", "intercept", "mining", "root", "project_profile"}

// refused are Kitsoki's keys kitsoki reads but does not act on, and why.
var refused = map[string]string{
	"harness_profiles": "kitsoki selects agents per story (agent_plugins:); named agent profiles are not built yet",
	"default_profile":  "kitsoki selects agents per story (agent_plugins:); named agent profiles are not built yet",
	"intercept":        "kitsoki has no intercept command (the pre-model prompt gate); route typed text with kitsoki run instead",
	"mining":           "kitsoki has no ambient session miner",
	"root":             "kitsoki run needs a story file; the implicit dev-story root is Kitsoki's own story",
	"project_profile":  "kitsoki run needs a story file; the implicit dev-story root is Kitsoki's own story",
}

// Error is a problem in a config file, at a position.
type Error struct {
	File      string
	Line, Col int
	Path      string // key path, e.g. story_dirs[1]
	Msg       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Col, e.Path, e.Msg)
}

// Errors are every problem found, in file order.
type Errors []*Error

func (es Errors) Error() string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return strings.Join(out, "\n")
}

// Load reads dir's .kitsoki.yaml and .kitsoki.local.yaml. Neither being
// there is no error: the zero Config.
func Load(dir string) (*Config, error) {
	base, err := read(filepath.Join(dir, File))
	if err != nil {
		return nil, err
	}
	local, err := read(filepath.Join(dir, LocalFile))
	if err != nil {
		return nil, err
	}
	cfg := base
	if cfg == nil {
		cfg = &Config{}
	}
	if local != nil && len(local.StoryDirs) > 0 {
		cfg.StoryDirs = local.StoryDirs // the local file wins, as in Kitsoki
	}
	if cfg.Path == "" && local != nil {
		cfg.Path = local.Path
	}
	return cfg, nil
}

// read reads one config file; nil when it does not exist.
func read(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("project config: %w", err)
	}
	return Parse(b, path)
}

// Parse reads config text; path names the file in messages and relative
// story_dirs are taken from its directory.
func Parse(b []byte, path string) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: YAML syntax error: %w", path, err)
	}
	cfg := &Config{Path: path}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	p := &parser{file: path}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.bad(root, "", "%s must be a mapping of %s", filepath.Base(path), strings.Join(Keys, ", "))
		return nil, p.errs
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case k.Value == "story_dirs":
			cfg.StoryDirs = p.dirs(v, filepath.Dir(path))
		case refused[k.Value] != "":
			p.bad(k, k.Value, "%q is a Kitsoki key kitsoki does not act on: %s; remove it", k.Value, refused[k.Value])
		default:
			hint := ""
			if best := nearmiss.Closest(k.Value, Keys, 2); best != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", best)
			}
			p.bad(k, k.Value, "unknown key %q%s (known: %s)", k.Value, hint, strings.Join(Keys, ", "))
		}
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return cfg, nil
}

type parser struct {
	file string
	errs Errors
}

func (p *parser) bad(n *yaml.Node, path, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: n.Line, Col: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// dirs reads story_dirs: a list of directories (a single string is one).
func (p *parser) dirs(n *yaml.Node, base string) []string {
	var items []*yaml.Node
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil
		}
		items = []*yaml.Node{n}
	case yaml.SequenceNode:
		items = n.Content
	default:
		p.bad(n, "story_dirs", "story_dirs must be a list of directories (e.g. [stories, ../shared/stories]), got a mapping")
		return nil
	}
	var out []string
	for i, it := range items {
		if it.Kind != yaml.ScalarNode || strings.TrimSpace(it.Value) == "" {
			p.bad(it, fmt.Sprintf("story_dirs[%d]", i), "a story directory must be a non-empty path")
			continue
		}
		d := filepath.FromSlash(it.Value)
		if !filepath.IsAbs(d) {
			d = filepath.Join(base, d)
		}
		if !slices.Contains(out, d) {
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}
