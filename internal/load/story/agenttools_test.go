package story

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

func TestAgentToolsLoad(t *testing.T) {
	s, err := Load("testdata/agenttools/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tagger := s.Plugins["agent.tagger"]
	want := []agent.ToolDeclaration{
		{
			Name: "add_tag", Description: "Add an existing tag to the current task.", Surfaces: []string{"kanban-task"},
			InputSchema:  json.RawMessage(`{"additionalProperties":false,"properties":{"tag_id":{"type":"string"}},"required":["tag_id"],"type":"object"}`),
			OutputSchema: json.RawMessage(`{"additionalProperties":false,"properties":{"tag_id":{"type":"string"},"task_id":{"type":"string"}},"required":["task_id","tag_id"],"type":"object"}`),
			Annotations:  agent.ToolAnnotations{ReadOnly: false, Destructive: false, Idempotent: true, OpenWorld: false},
		},
		{
			Name: "list_tags", Description: "List the tags.", Surfaces: []string{"kanban-task", "office-task"},
			InputSchema: json.RawMessage(`{"type":"object"}`),
			// Omitted hints take the conservative defaults.
			Annotations: agent.ToolAnnotations{ReadOnly: true, Destructive: true, Idempotent: false, OpenWorld: true},
		},
	}
	if diff := cmp.Diff(want, tagger.AgentTools); diff != "" {
		t.Errorf("agent.tagger tools (-want +got):\n%s", diff)
	}
	packaged := s.Plugins["agent.packaged"]
	abs, _ := filepath.Abs("testdata/agenttools/bin/packaged-tools.yaml")
	if packaged.Manifest != abs || packaged.Enabled {
		t.Errorf("agent.packaged: manifest %q, enabled %v; want %q and false", packaged.Manifest, packaged.Enabled, abs)
	}
	if len(packaged.AgentTools) != 1 || packaged.AgentTools[0].Name != "summarize" || packaged.AgentTools[0].Surfaces[0] != "office-task" {
		t.Errorf("manifest tools: %+v", packaged.AgentTools)
	}
}

// pluginStory writes a story whose agent_plugins: block is plugins (YAML
// indented under agent_plugins:) and loads it, returning the diagnostics.
func pluginStory(t *testing.T, plugins string, files map[string]string) []string {
	t.Helper()
	dir := t.TempDir()
	src := "app: {id: t}\nagent_plugins:\n" + plugins + "\nroot: idle\nstates:\n  idle: {terminal: true}\n"
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Write(t, dir, files)
	s, err := Load(filepath.Join(dir, "app.yaml"))
	if err == nil {
		s.Close()
		return nil
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatal(err)
	}
	var out []string
	for _, d := range le.Diagnostics {
		out = append(out, d.String())
	}
	return out
}

// tool renders one agent_tools entry at list indentation.
func tool(name, description, surfaces, input string, extra ...string) string {
	s := fmt.Sprintf("      - name: %s\n        description: %q\n        surfaces: %s\n", name, description, surfaces)
	if input != "" {
		s += "        input_schema: " + input + "\n"
	}
	for _, e := range extra {
		s += "        " + e + "\n"
	}
	return s
}

func subprocess(alias, tools string) string {
	return "  " + alias + ":\n    plugin: subprocess\n    command: ./bin/p\n    agent_tools:\n" + tools
}

const obj = "{type: object}"

// schemaOf returns a YAML schema whose compact JSON is exactly n bytes.
func schemaOf(n int) string {
	base := len(`{"description":"","type":"object"}`)
	return fmt.Sprintf("{type: object, description: %s}", strings.Repeat("x", n-base))
}

func TestAgentToolLimits(t *testing.T) {
	tools := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(tool(fmt.Sprintf("t%d", i), "d", "[kanban-task]", obj))
		}
		return b.String()
	}
	cases := []struct {
		name    string
		plugins string
		want    string // "" means it loads
	}{
		{"16 tools", subprocess("agent.p", tools(16)), ""},
		{"17 tools", subprocess("agent.p", tools(17)), "agent_plugins.agent.p.agent_tools: 17 tools declared; a plugin may declare at most 16"},
		{"name of 32", subprocess("agent.p", tool(strings.Repeat("a", 32), "d", "[kanban-task]", obj)), ""},
		{"name of 33", subprocess("agent.p", tool(strings.Repeat("a", 33), "d", "[kanban-task]", obj)),
			`agent_plugins.agent.p.agent_tools[0].name: tool name "` + strings.Repeat("a", 33) + `" must match ^[a-z0-9][a-z0-9_]{0,31}$ (lowercase letters, digits and _, at most 32 characters, not starting with _)`},
		{"name with capitals", subprocess("agent.p", tool("AddTag", "d", "[kanban-task]", obj)), `tool name "AddTag" must match`},
		{"name starting with _", subprocess("agent.p", tool("_x", "d", "[kanban-task]", obj)), `tool name "_x" must match`},
		{"name with a dash", subprocess("agent.p", tool("add-tag", "d", "[kanban-task]", obj)), `tool name "add-tag" must match`},
		{"description of 1024", subprocess("agent.p", tool("t", strings.Repeat("d", 1024), "[kanban-task]", obj)), ""},
		{"description of 1025", subprocess("agent.p", tool("t", strings.Repeat("d", 1025), "[kanban-task]", obj)),
			"agent_plugins.agent.p.agent_tools[0].description: description is 1025 bytes; the limit is 1024"},
		{"input schema of 64 KiB", subprocess("agent.p", tool("t", "d", "[kanban-task]", schemaOf(65536))), ""},
		{"input schema over 64 KiB", subprocess("agent.p", tool("t", "d", "[kanban-task]", schemaOf(65537))),
			"agent_plugins.agent.p.agent_tools[0].input_schema: serialized schema is 65537 bytes; the limit is 65536 (64 KiB)"},
		{"output schema of 64 KiB", subprocess("agent.p", tool("t", "d", "[kanban-task]", obj, "output_schema: "+schemaOf(65536))), ""},
		{"output schema over 64 KiB", subprocess("agent.p", tool("t", "d", "[kanban-task]", obj, "output_schema: "+schemaOf(65537))),
			"agent_plugins.agent.p.agent_tools[0].output_schema: serialized schema is 65537 bytes; the limit is 65536 (64 KiB)"},
		{"both surfaces", subprocess("agent.p", tool("t", "d", "[kanban-task, office-task]", obj)), ""},
		{"duplicate surface", subprocess("agent.p", tool("t", "d", "[kanban-task, kanban-task]", obj)),
			`agent_plugins.agent.p.agent_tools[0].surfaces[1]: surface "kanban-task" is listed twice`},
		{"configuration surface", subprocess("agent.p", tool("t", "d", "[configuration]", obj)),
			`agent_plugins.agent.p.agent_tools[0].surfaces[0]: "configuration" is not a task surface; plugin tools may target kanban-task and office-task`},
		{"external surface", subprocess("agent.p", tool("t", "d", "[kanban-task, external]", obj)), `surfaces[1]: "external" is not a task surface`},
		{"no surfaces", subprocess("agent.p", tool("t", "d", "[]", obj)), "agent_tools[0].surfaces: surfaces: is empty; name kanban-task, office-task, or both"},
		{"surfaces missing", subprocess("agent.p", "      - {name: t, description: d, input_schema: {type: object}}\n"),
			"agent_tools[0]: surfaces: is required (kanban-task, office-task, or both)"},
		{"name missing", subprocess("agent.p", "      - {description: d, surfaces: [kanban-task], input_schema: {type: object}}\n"), "agent_tools[0]: name: is required"},
		{"description missing", subprocess("agent.p", "      - {name: t, surfaces: [kanban-task], input_schema: {type: object}}\n"),
			"agent_tools[0]: description: is required (it tells the agent what the tool does)"},
		{"input schema missing", subprocess("agent.p", tool("t", "d", "[kanban-task]", "")),
			"agent_tools[0]: input_schema: is required (a JSON Schema with type: object)"},
		{"input schema not an object schema", subprocess("agent.p", tool("t", "d", "[kanban-task]", "{type: array}")),
			`agent_tools[0].input_schema: the schema's root must be an object schema (type: object), got type "array"`},
		{"input schema without a type", subprocess("agent.p", tool("t", "d", "[kanban-task]", "{properties: {a: {type: string}}}")),
			`input_schema: the schema's root must be an object schema (type: object), got type (none)`},
		{"input schema a scalar", subprocess("agent.p", tool("t", "d", "[kanban-task]", "true")),
			`agent_tools[0].input_schema: expected a JSON Schema object with type: object, got the scalar "true"`},
		{"output schema not an object schema", subprocess("agent.p", tool("t", "d", "[kanban-task]", obj, "output_schema: {type: string}")),
			`agent_tools[0].output_schema: the schema's root must be an object schema (type: object), got type "string"`},
		{"schema does not compile", subprocess("agent.p", tool("t", "d", "[kanban-task]", "{type: object, properties: {a: {type: wat}}}")),
			"agent_tools[0].input_schema: does not compile:"},
		{"schema with an outside ref", subprocess("agent.p", tool("t", "d", "[kanban-task]", `{type: object, properties: {a: {$ref: "common.json"}}}`)),
			`agent_tools[0].input_schema: does not compile: $ref "common.json" points outside the schema: a tool schema must be self-contained (use #/$defs/...)`},
		{"schema with a local ref", subprocess("agent.p", tool("t", "d", "[kanban-task]", `{type: object, $defs: {s: {type: string}}, properties: {a: {$ref: "#/$defs/s"}}}`)), ""},
		{"unknown tool key", subprocess("agent.p", tool("t", "d", "[kanban-task]", obj, "title: T")), `agent_tools[0].title: unknown key "title"`},
		{"annotation not a boolean", subprocess("agent.p", tool("t", "d", "[kanban-task]", obj, "annotations: {read_only_hint: yes please}")),
			`agent_tools[0].annotations.read_only_hint: expected true or false, got the scalar "yes please"`},
		{"unknown annotation", subprocess("agent.p", tool("t", "d", "[kanban-task]", obj, "annotations: {title: x}")), `annotations.title: unknown key "title"`},
		{"same tool twice", subprocess("agent.p", tool("t", "d", "[kanban-task]", obj)+tool("t", "d", "[office-task]", obj)),
			`agent_plugins.agent.p.agent_tools[1]: tool "t" is declared twice (also at agent_plugins.agent.p.agent_tools[0])`},
		{"exposed name collision", subprocess("agent.a-b", tool("x", "d", "[kanban-task]", obj)) + subprocess("agent.a_b", tool("x", "d", "[kanban-task]", obj)),
			`agent_plugins.agent.a_b.agent_tools[0]: exposed tool name "kitsoki_agent_a_b_x" is also derived from agent_plugins.agent.a-b.agent_tools[0]; rename one of the tools or plugin aliases`},
		{"mcp_http", "  agent.remote:\n    plugin: mcp_http\n    endpoint: http://127.0.0.1:7301/mcp\n    agent_tools:\n" + tool("t", "d", "[kanban-task]", obj),
			"agent_plugins.agent.remote.agent_tools: mcp_http plugins cannot declare agent tools: kitsoki only calls their ask tool and does not run them; contribute tools from a subprocess plugin"},
		{"mcp_http manifest", "  agent.remote:\n    plugin: mcp_http\n    endpoint: http://127.0.0.1:7301/mcp\n    manifest: tools.yaml\n",
			"agent_plugins.agent.remote.manifest: mcp_http plugins cannot declare agent tools"},
		{"builtin", "  agent.claude:\n    plugin: builtin.claude_cli\n    agent_tools:\n" + tool("t", "d", "[kanban-task]", obj),
			"agent_plugins.agent.claude.agent_tools: builtin.claude_cli is a builtin plugin and cannot declare agent tools: only subprocess plugins contribute tools"},
		{"builtin local", "  agent.local:\n    plugin: builtin.local_llm\n    model: m\n    agent_tools: []\n",
			"agent_plugins.agent.local.agent_tools: builtin.local_llm is a builtin plugin and cannot declare agent tools"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			diags := pluginStory(t, c.plugins, nil)
			if c.want == "" {
				if diags != nil {
					t.Fatalf("the story does not load:\n%s", strings.Join(diags, "\n"))
				}
				return
			}
			for _, d := range diags {
				if strings.Contains(d, c.want) {
					return
				}
			}
			t.Fatalf("no diagnostic contains:\n  %s\ngot:\n  %s", c.want, strings.Join(diags, "\n  "))
		})
	}
}

func TestAgentToolManifest(t *testing.T) {
	manifest := "agent_tools:\n" + strings.ReplaceAll(tool("t", "d", "[kanban-task]", obj), "      ", "  ")
	head := "  agent.p:\n    plugin: subprocess\n    command: ./bin/p\n"
	cases := []struct {
		name    string
		plugins string
		files   map[string]string
		want    string
	}{
		{"beside the binary", head + "    manifest: p-tools.yaml\n", map[string]string{"bin/p-tools.yaml": manifest}, ""},
		{"both", head + "    manifest: p-tools.yaml\n    agent_tools: []\n", map[string]string{"bin/p-tools.yaml": manifest},
			"agent_plugins.agent.p.manifest: declare agent_tools: or manifest:, not both"},
		{"missing", head + "    manifest: p-tools.yaml\n", nil,
			"agent_plugins.agent.p.manifest: cannot read manifest bin/p-tools.yaml: no such file or directory"},
		{"not beside the binary", head + "    manifest: p-tools.yaml\n", map[string]string{"p-tools.yaml": manifest},
			"cannot read manifest bin/p-tools.yaml"},
		{"empty", head + "    manifest: p-tools.yaml\n", map[string]string{"bin/p-tools.yaml": ""},
			"agent_plugins.agent.p.manifest: manifest bin/p-tools.yaml is empty; it must hold agent_tools:"},
		{"no list", head + "    manifest: p-tools.yaml\n", map[string]string{"bin/p-tools.yaml": "agent_tools: \n"}, ""},
		{"without agent_tools", head + "    manifest: p-tools.yaml\n", map[string]string{"bin/p-tools.yaml": "{}\n"},
			"bin/p-tools.yaml:1:1: a plugin manifest must hold agent_tools:"},
		{"unknown key", head + "    manifest: p-tools.yaml\n", map[string]string{"bin/p-tools.yaml": manifest + "version: 2\n"},
			`bin/p-tools.yaml:6:1: version: unknown key "version"`},
		{"invalid tool, reported in the manifest", head + "    manifest: p-tools.yaml\n",
			map[string]string{"bin/p-tools.yaml": strings.Replace(manifest, "name: t", "name: T", 1)},
			`bin/p-tools.yaml:2:11: agent_plugins.agent.p.agent_tools[0].name: tool name "T" must match`},
		{"bare command not in PATH", "  agent.p:\n    plugin: subprocess\n    command: kitsoki-no-such-plugin-binary\n    manifest: p-tools.yaml\n", nil,
			`agent_plugins.agent.p.manifest: cannot find command "kitsoki-no-such-plugin-binary" in PATH, so its manifest "p-tools.yaml" cannot be located beside it`},
		{"blank", head + "    manifest: \"\"\n", nil, "agent_plugins.agent.p.manifest: manifest: needs the manifest's file name, relative to the plugin's binary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			diags := pluginStory(t, c.plugins, c.files)
			if c.want == "" {
				if diags != nil {
					t.Fatalf("the story does not load:\n%s", strings.Join(diags, "\n"))
				}
				return
			}
			for _, d := range diags {
				if strings.Contains(d, c.want) {
					return
				}
			}
			t.Fatalf("no diagnostic contains:\n  %s\ngot:\n  %s", c.want, strings.Join(diags, "\n  "))
		})
	}
}
