package plugintools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/schema"
)

// tool is one declared tool, ready to offer and to call: its exposed
// definition, its compiled schemas and a version that changes whenever
// the definition does.
type tool struct {
	decl     agent.ToolDeclaration
	exposed  string
	surfaces []toolserver.Surface
	input    *schema.Schema
	output   *schema.Schema // nil when no output schema is declared
	def      mcp.Tool
	version  string
}

// buildTools checks every tool declaration of decls (the story loader has
// already done so with positions; this is the same check for callers that
// build declarations in code, and the guard of a reload) and compiles
// them. Plugins without tools are left out. Any problem fails the whole
// set, so a bad reload changes nothing.
func buildTools(decls map[string]agent.Declaration) (map[string]map[string]*tool, error) {
	out := map[string]map[string]*tool{}
	owner := map[string]string{} // exposed name → "alias tool"
	var problems []string
	aliases := make([]string, 0, len(decls))
	for alias := range decls {
		aliases = append(aliases, alias)
	}
	sort.Strings(aliases)
	for _, alias := range aliases {
		d := decls[alias]
		if len(d.AgentTools) == 0 {
			continue
		}
		if d.Plugin != agent.PluginSubprocess {
			problems = append(problems, fmt.Sprintf("agent_plugins.%s: %s plugins cannot declare agent tools: only subprocess plugins contribute tools", alias, d.Plugin))
			continue
		}
		if len(d.AgentTools) > agent.MaxAgentTools {
			problems = append(problems, fmt.Sprintf("agent_plugins.%s.agent_tools: %d tools declared; a plugin may declare at most %d", alias, len(d.AgentTools), agent.MaxAgentTools))
			continue
		}
		tools := map[string]*tool{}
		for i, td := range d.AgentTools {
			where := fmt.Sprintf("agent_plugins.%s.agent_tools[%d]", alias, i)
			t, err := compileTool(alias, td)
			if err != nil {
				problems = append(problems, where+": "+err.Error())
				continue
			}
			if prev, taken := owner[t.exposed]; taken {
				problems = append(problems, fmt.Sprintf("%s: exposed tool name %q is also derived from %s", where, t.exposed, prev))
				continue
			}
			owner[t.exposed] = where
			tools[td.Name] = t
		}
		out[alias] = tools
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid agent tool declarations:\n  %s", strings.Join(problems, "\n  "))
	}
	return out, nil
}

// compileTool checks one declaration and builds its MCP definition.
func compileTool(alias string, td agent.ToolDeclaration) (*tool, error) {
	switch {
	case !agent.ValidToolName(td.Name):
		return nil, fmt.Errorf("tool name %q must match ^[a-z0-9][a-z0-9_]{0,31}$", td.Name)
	case strings.TrimSpace(td.Description) == "":
		return nil, fmt.Errorf("tool %s has no description", td.Name)
	case len(td.Description) > agent.MaxToolDescriptionBytes:
		return nil, fmt.Errorf("description is %d bytes; the limit is %d", len(td.Description), agent.MaxToolDescriptionBytes)
	case len(td.Surfaces) == 0:
		return nil, fmt.Errorf("tool %s targets no surface", td.Name)
	case td.InputSchema == nil:
		return nil, fmt.Errorf("tool %s has no input_schema", td.Name)
	}
	t := &tool{decl: td, exposed: agent.ExposedToolName(alias, td.Name)}
	for i, s := range td.Surfaces {
		if s != agent.SurfaceKanbanTask && s != agent.SurfaceOfficeTask {
			return nil, fmt.Errorf("surfaces[%d]: %q is not a task surface", i, s)
		}
		for _, prev := range td.Surfaces[:i] {
			if prev == s {
				return nil, fmt.Errorf("surface %q is listed twice", s)
			}
		}
		t.surfaces = append(t.surfaces, toolserver.Surface(s))
	}
	var err error
	if t.input, err = objectSchema("input_schema", td.InputSchema); err != nil {
		return nil, err
	}
	if td.OutputSchema != nil {
		if t.output, err = objectSchema("output_schema", td.OutputSchema); err != nil {
			return nil, err
		}
	}
	t.def = mcp.NewToolWithRawSchema(t.exposed, td.Description, td.InputSchema)
	if td.OutputSchema != nil {
		t.def.RawOutputSchema = td.OutputSchema
	}
	a := td.Annotations
	t.def.Annotations.ReadOnlyHint = mcp.ToBoolPtr(a.ReadOnly)
	t.def.Annotations.DestructiveHint = mcp.ToBoolPtr(a.Destructive)
	t.def.Annotations.IdempotentHint = mcp.ToBoolPtr(a.Idempotent)
	t.def.Annotations.OpenWorldHint = mcp.ToBoolPtr(a.OpenWorld)
	b, _ := json.Marshal(struct {
		Name string
		Decl agent.ToolDeclaration
	}{t.exposed, td})
	sum := sha256.Sum256(b)
	t.version = hex.EncodeToString(sum[:8])
	return t, nil
}

// objectSchema checks a tool schema's size, root and compilation.
func objectSchema(name string, raw json.RawMessage) (*schema.Schema, error) {
	if len(raw) > agent.MaxToolSchemaBytes {
		return nil, fmt.Errorf("%s: serialized schema is %d bytes; the limit is %d (64 KiB)", name, len(raw), agent.MaxToolSchemaBytes)
	}
	s, err := schema.CompileDocument(name, raw)
	if err != nil {
		return nil, fmt.Errorf("%s does not compile: %s", name, strings.TrimPrefix(err.Error(), name+": "))
	}
	if m, _ := s.Doc.(map[string]any); m["type"] != "object" {
		return nil, fmt.Errorf("%s: the schema's root must be an object schema (type: object)", name)
	}
	return s, nil
}
