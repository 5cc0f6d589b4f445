package routes

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Hashes are the four fingerprints a report records of what it measured
// (eval-format.md §3). An empty hash means "unknown" and is never compared.
type Hashes struct {
	Dataset string
	Prompt  string
	Schema  string
	Toolbox string
}

// HashBytes is "sha256:<hex>" of b.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HashFile hashes a file's bytes; "" when it cannot be read.
func HashFile(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return HashBytes(b)
}

// HashToolbox hashes a tool list: sorted, joined with NUL bytes. An empty
// list hashes the empty string.
func HashToolbox(tools []string) string {
	t := append([]string(nil), tools...)
	sort.Strings(t)
	return HashBytes([]byte(strings.Join(t, "\x00")))
}

// SiteHashes computes the prompt, schema and toolbox hashes of a call site
// as it is now. Prompt and schema paths are relative to the story
// directory; an inline prompt is not a file and hashes to "".
func SiteHashes(st *story.Story, cs *CallSite) Hashes {
	var h Hashes
	h.Prompt = HashFile(inWorkspace(st, cs.PromptPath))
	h.Schema = HashFile(inWorkspace(st, cs.SchemaPath))
	var tools []string
	if p := st.Agents[cs.Agent]; p != nil {
		tools = p.Tools
	}
	h.Toolbox = HashToolbox(tools)
	return h
}

// inWorkspace resolves a story-relative path inside the story's workspace;
// "" for "" and for a path outside it (never read).
func inWorkspace(st *story.Story, p string) string {
	if p == "" {
		return ""
	}
	if st.Workspace.IsZero() {
		return StoryPath(st.Dir, p)
	}
	real, err := st.Workspace.Resolve(st.Dir, p)
	if err != nil {
		return ""
	}
	return real
}

// StoryPath joins a story-relative path to the story directory; "" stays
// "", and text that cannot be a path (an inline prompt) yields a path that
// does not exist.
func StoryPath(dir, p string) string {
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, filepath.FromSlash(p))
}

// Diff lists the hashes present on both sides that differ, by report key
// (dataset_hash, prompt_hash, schema_hash, toolbox_hash).
func (h Hashes) Diff(other Hashes) []string {
	var out []string
	for _, c := range []struct {
		key  string
		a, b string
	}{
		{"dataset_hash", h.Dataset, other.Dataset},
		{"prompt_hash", h.Prompt, other.Prompt},
		{"schema_hash", h.Schema, other.Schema},
		{"toolbox_hash", h.Toolbox, other.Toolbox},
	} {
		if c.a != "" && c.b != "" && c.a != c.b {
			out = append(out, c.key)
		}
	}
	return out
}
