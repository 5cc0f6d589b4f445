package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/story"
)

const workspaceUsage = "directory every file the story reads must stay inside (default: the story's git work tree, else its directory)"

// addWorkspaceFlag adds --workspace to a command that loads stories.
func addWorkspaceFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().StringVar(&g.workspace, "workspace", "", workspaceUsage)
}

// loadStoryIn loads a story for the MCP tools, confined to their workspace.
func loadStoryIn(_ context.Context, path, ws string) (*story.Story, error) {
	return story.Load(path, story.WithWorkspace(ws))
}
