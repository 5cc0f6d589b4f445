package toolserver

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Names of the story-files provider's tools.
const (
	ToolListStoryFiles = "list_story_files_kitsoki"
	ToolReadStoryFile  = "read_story_file_kitsoki"
	maxListedFiles     = 1000
	maxReadBytes       = 256 << 10
)

// storyFilesTools is kitsoki's own tool provider: read-only access to the
// run's story directory (prompts, schemas, includes). Hidden entries
// (.git, .kitsoki) are skipped. Without a story directory it offers
// nothing.
func storyFilesTools(s *Session, _ Profile) []Tool {
	if s.cfg.StoryDir == "" {
		return nil
	}
	list := mcp.NewTool(ToolListStoryFiles,
		mcp.WithDescription("List the files of this run's story directory (relative paths), optionally under a subdirectory."),
		mcp.WithTitleAnnotation("List story files"),
		mcp.WithString("dir", mcp.Description("A subdirectory of the story, e.g. prompts. Default: the whole story.")))
	Annotate(&list, true, false, true, false)
	read := mcp.NewTool(ToolReadStoryFile,
		mcp.WithDescription("Read a text file of this run's story directory (at most 256 KiB)."),
		mcp.WithTitleAnnotation("Read story file"),
		mcp.WithString("path", mcp.Required(), mcp.Description("The file, relative to the story directory.")))
	Annotate(&read, true, false, true, false)
	return []Tool{
		{Def: list, Handler: s.handleListStoryFiles},
		{Def: read, Handler: s.handleReadStoryFile},
	}
}

func (s *Session) handleListStoryFiles(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	dir := req.GetString("dir", ".")
	var files []string
	truncated, first := false, true
	err := WalkConfined(s.cfg.StoryDir, dir, func(r string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		start := first
		first = false
		if !start && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if len(files) == maxListedFiles {
			truncated = true
			return filepath.SkipAll
		}
		files = append(files, filepath.ToSlash(r))
		return nil
	})
	if err != nil {
		return ToolError("dir: %v", err), nil
	}
	if files == nil {
		files = []string{}
	}
	return JSONResult(map[string]any{"files": files, "truncated": truncated}), nil
}

func (s *Session) handleReadStoryFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := req.RequireString("path")
	if err != nil {
		return ToolError("%v", err), nil
	}
	f, err := OpenConfined(s.cfg.StoryDir, p)
	if err != nil {
		return ToolError("path: %v", err), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return ToolError("path: %v", err), nil
	case fi.IsDir():
		return ToolError("path: %s is a directory; use %s", p, ToolListStoryFiles), nil
	case fi.Size() > maxReadBytes:
		return ToolError("path: %s is %d bytes, more than the %d this tool reads", p, fi.Size(), maxReadBytes), nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return ToolError("path: %v", err), nil
	}
	if int64(len(b)) > maxReadBytes {
		return ToolError("path: %s grew past the %d bytes this tool reads", p, maxReadBytes), nil
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return ToolError("path: %s is not a text file", p), nil
	}
	return mcp.NewToolResultText(string(b)), nil
}
