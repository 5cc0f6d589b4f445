package main

import (
	"context"

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
	return []story.Option{story.WithWorkspace(g.workspace), story.WithStoriesPath(g.storiesPath...)}
}

// loadStoryIn loads a story for the MCP tools, confined to their workspace.
func loadStoryIn(_ context.Context, path, ws string) (*story.Story, error) {
	return story.Load(path, story.WithWorkspace(ws))
}
