package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Limits of plugin-contributed agent tools (plugin-agent-tools seed).
const (
	// MaxAgentTools is how many tools one plugin may declare.
	MaxAgentTools = 16
	// MaxToolNameLen bounds a tool's plugin-local name.
	MaxToolNameLen = 32
	// MaxToolDescriptionBytes bounds a tool's description.
	MaxToolDescriptionBytes = 1024
	// MaxToolSchemaBytes bounds each schema, serialized as compact JSON.
	MaxToolSchemaBytes = 64 << 10
	// MaxToolResultBytes bounds a result's text plus structured content.
	MaxToolResultBytes = 1 << 20
	// MaxExposedToolName is the longest MCP tool name providers accept.
	MaxExposedToolName = 64
	// ToolCallTimeout is the hard deadline of one tool call.
	ToolCallTimeout = 30 * time.Second
)

// The task surfaces a plugin tool may target (mcp-surfaces.md).
const (
	SurfaceKanbanTask = "kanban-task"
	SurfaceOfficeTask = "office-task"
)

// ToolSurfaces lists the surfaces a plugin tool may target, in the order
// messages name them.
var ToolSurfaces = []string{SurfaceKanbanTask, SurfaceOfficeTask}

// ExposedToolPrefix starts the MCP name of every plugin tool; kitsoki's
// own tools end in "_kitsoki" instead, so the two never collide.
const ExposedToolPrefix = "kitsoki_"

// ToolDeclaration is one agent tool a subprocess plugin contributes, as
// declared under agent_tools: (or in the plugin's manifest:) and checked
// by the story loader.
type ToolDeclaration struct {
	// Name is the plugin-local name (^[a-z0-9][a-z0-9_]{0,31}$).
	Name        string
	Description string
	// Surfaces are kanban-task and/or office-task, without duplicates.
	Surfaces []string
	// InputSchema is the compact JSON of the input schema (an object
	// schema); OutputSchema likewise, or nil when none is declared.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  ToolAnnotations
}

// ToolAnnotations are the MCP hints of a tool. They are hints for the
// client, never authorization.
type ToolAnnotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// DefaultToolAnnotations are the conservative values of omitted hints:
// not read-only, destructive, not idempotent, open world.
var DefaultToolAnnotations = ToolAnnotations{ReadOnly: false, Destructive: true, Idempotent: false, OpenWorld: true}

// HasSurface reports whether the tool targets surface.
func (t ToolDeclaration) HasSurface(surface string) bool {
	for _, s := range t.Surfaces {
		if s == surface {
			return true
		}
	}
	return false
}

// ValidToolName reports whether name is a valid plugin-local tool name:
// ^[a-z0-9][a-z0-9_]{0,31}$.
func ValidToolName(name string) bool {
	if name == "" || len(name) > MaxToolNameLen || name[0] == '_' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// PluginSlug is the plugin alias as it appears in exposed tool names:
// lowercased, every character outside [a-z0-9_] replaced by "_", leading
// and trailing "_" trimmed ("agent.Tag-Bot" → "agent_tag_bot").
func PluginSlug(alias string) string {
	b := []byte(strings.ToLower(alias))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return strings.Trim(string(b), "_")
}

// ExposedToolName derives the MCP name of plugin alias's tool name:
// kitsoki_<slug>_<name>. When that exceeds 64 characters the slug is cut
// and an 8-hex-digit hash of the alias appended to it, so the name stays
// readable, fits, and still tells long aliases apart:
// kitsoki_<slug prefix>_<hash>_<name>.
func ExposedToolName(alias, name string) string {
	slug := PluginSlug(alias)
	full := ExposedToolPrefix + slug + "_" + name
	if len(full) <= MaxExposedToolName {
		return full
	}
	sum := sha256.Sum256([]byte(alias))
	hash := hex.EncodeToString(sum[:4])
	keep := MaxExposedToolName - len(ExposedToolPrefix) - len("_"+hash) - len("_"+name)
	keep = max(keep, 0)
	prefix := strings.TrimRight(slug[:min(keep, len(slug))], "_")
	if prefix == "" {
		return ExposedToolPrefix + hash + "_" + name
	}
	return ExposedToolPrefix + prefix + "_" + hash + "_" + name
}
