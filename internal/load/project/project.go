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
	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// File and LocalFile are the names Load looks for.
//
// The agent profiles (profiles:, Kitsoki's harness_profiles:,
// default_profile:, story_profiles:, agent_profiles:) are read here and
// resolved when a run chooses one (Profile.Resolve).
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
	// Profiles are the named agent profiles of profiles: and Kitsoki's
	// harness_profiles:, by name (docs/agents/profiles.md).
	Profiles map[string]*Profile
	// DefaultProfile names the profile a run starts on when neither a
	// flag nor story_profiles: chooses one (default_profile:); "" keeps
	// the story's own agents. DefaultAt is where it was written.
	DefaultProfile string
	DefaultAt      Pos
	// StoryProfiles chooses a profile per story, by app id or by the
	// story's directory name (story_profiles:).
	StoryProfiles map[string]string
	// AgentProfiles chooses a profile per persona, by the agents: entry's
	// name (agent_profiles:).
	AgentProfiles map[string]string
}

// Keys are the top-level keys of Kitsoki's .kitsoki.yaml.
var Keys = []string{"story_dirs", "harness_profiles", "default_profile", "intercept", "mining", "root", "project_profile",
	"profiles", "story_profiles", "agent_profiles"}

// refused are Kitsoki's keys kitsoki reads but does not act on, and why.
var refused = map[string]string{
	"intercept":       "kitsoki has no intercept command (the pre-model prompt gate); route typed text with kitsoki run instead",
	"mining":          "kitsoki has no ambient session miner",
	"root":            "kitsoki run needs a story file; the implicit dev-story root is Kitsoki's own story",
	"project_profile": "kitsoki run needs a story file; the implicit dev-story root is Kitsoki's own story",
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
	if local != nil {
		cfg.overlay(local) // the local file wins, as in Kitsoki
	}
	if cfg.Path == "" && local != nil {
		cfg.Path = local.Path
	}
	if err := cfg.Check(); err != nil {
		return nil, err
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
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
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
		case k.Value == "profiles" || k.Value == "harness_profiles":
			p.profiles(cfg, k.Value, v)
		case k.Value == "default_profile":
			cfg.DefaultProfile, cfg.DefaultAt = p.scalar(v, k.Value), Pos{File: path, Line: v.Line, Col: v.Column}
		case k.Value == "story_profiles":
			cfg.StoryProfiles = p.strMap(v, k.Value)
		case k.Value == "agent_profiles":
			cfg.AgentProfiles = p.strMap(v, k.Value)
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

// overlay lays the local file's settings over cfg's: story_dirs and
// default_profile replace, a profile's keys replace the shared profile's
// one by one (a new profile is added), and the per-story and per-agent
// choices replace by name.
func (cfg *Config) overlay(local *Config) {
	if len(local.StoryDirs) > 0 {
		cfg.StoryDirs = local.StoryDirs
	}
	if local.DefaultProfile != "" {
		cfg.DefaultProfile, cfg.DefaultAt = local.DefaultProfile, local.DefaultAt
	}
	for name, lp := range local.Profiles {
		if cfg.Profiles == nil {
			cfg.Profiles = map[string]*Profile{}
		}
		if base, ok := cfg.Profiles[name]; ok {
			base.merge(lp)
		} else {
			cfg.Profiles[name] = lp
		}
	}
	cfg.StoryProfiles = mergeMap(cfg.StoryProfiles, local.StoryProfiles)
	cfg.AgentProfiles = mergeMap(cfg.AgentProfiles, local.AgentProfiles)
}

func mergeMap(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	if base == nil {
		base = map[string]string{}
	}
	for k, v := range over {
		base[k] = v
	}
	return base
}

// Check reports a name that names no profile: default_profile:, a
// story's or an agent's choice.
func (cfg *Config) Check() error {
	var errs Errors
	unknown := func(pos Pos, path, name string) {
		errs = append(errs, &Error{File: pos.File, Line: pos.Line, Col: pos.Col, Path: path,
			Msg: fmt.Sprintf("profile %q is not declared (declared: %s)", name, cfg.profileList())})
	}
	for _, name := range sortedKeys(cfg.Profiles) {
		if err := cfg.Profiles[name].check(); err != nil {
			errs = append(errs, err)
		}
	}
	if n := cfg.DefaultProfile; n != "" && cfg.Profiles[n] == nil {
		unknown(cfg.DefaultAt, "default_profile", n)
	}
	for _, m := range []struct {
		key  string
		vals map[string]string
	}{{"story_profiles", cfg.StoryProfiles}, {"agent_profiles", cfg.AgentProfiles}} {
		for _, k := range sortedKeys(m.vals) {
			if n := m.vals[k]; cfg.Profiles[n] == nil {
				unknown(Pos{File: cfg.Path}, m.key+"."+k, n)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (cfg *Config) profileList() string {
	if len(cfg.Profiles) == 0 {
		return "none; declare them under profiles:"
	}
	return strings.Join(sortedKeys(cfg.Profiles), ", ")
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
