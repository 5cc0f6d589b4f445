package main

import (
	"context"
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
