package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

const workspaceUsage = "directory every file the story reads must stay inside (default: the story's git work tree, else its directory)"

// addWorkspaceFlag adds --workspace to a command that loads stories.
func addWorkspaceFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().StringVar(&g.workspace, "workspace", "", workspaceUsage)
	cmd.Flags().StringArrayVar(&g.storiesPath, "stories-path", nil, storiesPathUsage)
}

const storiesPathUsage = "directory holding stories (NAME/app.yaml) that @kitsoki/NAME imports resolve to, searched before KITSOKI_STORIES_PATH and $KITSOKI_REPO/stories (repeatable)"

// storyOpts are the load options of the workspace flags.
func (g *globals) storyOpts() []story.Option {
	dirs := slices.Clone(g.storiesPath)
	if g.project != nil {
		dirs = append(dirs, g.project.StoryDirs...)
	}
	return []story.Option{story.WithWorkspace(g.workspace), story.WithStoriesPath(dirs...), story.WithLibrary(g.library)}
}

// storyLibrary is the story library shipped with kitsoki: the stories
// directory of an installation (<prefix>/share/kitsoki/stories, beside
// <prefix>/bin/kitsoki), else of the checkout the binary was built in
// (<repo>/stories beside <repo>/bin/kitsoki); "" when neither exists.
func storyLibrary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	prefix := filepath.Dir(filepath.Dir(exe))
	for _, d := range []string{filepath.Join(prefix, "share", "kitsoki", "stories"), filepath.Join(prefix, "stories")} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// loadStoryIn loads a story for the MCP tools, confined to their workspace.
func loadStoryIn(_ context.Context, path, ws string) (*story.Story, error) {
	return story.Load(path, story.WithWorkspace(ws))
}

// storyFileErr checks that a story path names a file to load (a story
// directory: its app.yaml), for the commands that look at the path before
// loading the story; the error names the path as typed, as the loader's
// does.
func storyFileErr(path string) error {
	root := story.RootFile(path)
	fi, err := os.Stat(root)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s: cannot read story file: not a regular file", path)
	case errors.Is(err, fs.ErrNotExist) && root != path:
		return fmt.Errorf("%s: %s is a directory without an %s: name the story's root file", root, path, story.RootFileName)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: cannot read story file: no such file or directory", path)
	case err != nil:
		return fmt.Errorf("%s: cannot read story file: %w", path, err)
	}
	return nil
}
