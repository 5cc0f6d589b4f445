package testrunner

import (
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// WithFlowWorkspace sets the workspace the files a fixture names (its app:,
// its host_cassette:) and the story's own files must stay inside (the
// --workspace flag). Without it a fixture's workspace is that of the story
// the fixtures were loaded for (LoadFixtures' appPath): the git work tree
// enclosing it, else its directory; for a fixture loaded without one, that
// of the fixture file. Never that of the app: the fixture names, which is
// what is being checked. A fixture may also name files under its own
// directory: the fixture file is the one the caller pointed at, and files
// beside it are as much the caller's choice.
func WithFlowWorkspace(dir string) FlowOption {
	return func(c *flowConfig) { c.workspace = dir }
}

// WithStoriesPath puts dirs first on the search path of the stories'
// @kitsoki/NAME imports (the --stories-path flag; see story.WithStoriesPath).
func WithStoriesPath(dirs ...string) FlowOption {
	return func(c *flowConfig) { c.storiesPath = append(c.storiesPath, dirs...) }
}

// yamlAt is where a fixture key's value is written (1-based; 0 = unknown).
type yamlAt struct{ line, col int }

func at(n *yaml.Node) yamlAt {
	if n == nil {
		return yamlAt{}
	}
	return yamlAt{n.Line, n.Column}
}

// where renders the fixture file and position as file:line:col.
func (a yamlAt) where(file string) string {
	if a.line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d:%d", file, a.line, a.col)
}

// confine checks that the fixture's story and cassette are inside the
// workspace (or under the fixture's directory) and returns the workspace
// directory the story loads with ("" for its own default, when the story
// sits beside the fixture outside the workspace).
func (r *Runner) confine(fx *Fixture) (string, error) {
	anchor := fx.defaultApp
	if anchor == "" {
		anchor = fx.File
	}
	ws, err := workspace.For(anchor, r.cfg.workspace)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fx.Name, err)
	}
	own, ownErr := workspace.New(filepath.Dir(absPath(fx.File)))
	check := func(p string) error {
		_, err := ws.Resolve("", absPath(p))
		if err != nil && ownErr == nil {
			if _, err2 := own.Resolve("", absPath(p)); err2 == nil {
				return nil
			}
		}
		return err
	}
	storyWS := ws.Dir()
	if fx.App != "" {
		if err := check(fx.AppPath); err != nil {
			return "", fmt.Errorf("%s: app: %w", fx.appAt.where(fx.File), renamed(err, fx.App))
		}
		if _, err := ws.Resolve("", absPath(fx.AppPath)); err != nil {
			storyWS = "" // beside the fixture: the story's own workspace
		}
	}
	if fx.CassettePath != "" {
		if err := check(fx.CassettePath); err != nil {
			return "", fmt.Errorf("%s: host_cassette: %w", fx.cassetteAt.where(fx.File), renamed(err, fx.HostCassette))
		}
	}
	if fx.HTTPCassettePath != "" {
		if err := check(fx.HTTPCassettePath); err != nil {
			return "", fmt.Errorf("%s: starlark_http_cassette: %w", fx.httpCassetteAt.where(fx.File), renamed(err, fx.HTTPCassette))
		}
	}
	if fx.InspectCassettePath != "" {
		if err := check(fx.InspectCassettePath); err != nil {
			return "", fmt.Errorf("%s: starlark_inspect_cassette: %w", fx.inspectCassetteAt.where(fx.File), renamed(err, fx.InspectCassette))
		}
	}
	for i, fe := range fx.ExpectFiles {
		if err := check(fe.Abs); err != nil {
			return "", fmt.Errorf("%s: expect_files[%d].path: %w", fe.at.where(fx.File), i, renamed(err, fe.Path))
		}
	}
	return storyWS, nil
}

// renamed names the path in a workspace.OutsideError as the fixture wrote
// it.
func renamed(err error, name string) error {
	if oe, ok := err.(*workspace.OutsideError); ok {
		c := *oe
		c.Name = name
		return &c
	}
	return err
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
