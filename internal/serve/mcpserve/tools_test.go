package mcpserve

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/mcptest"
)

// TestOutsideSurfacesOverHTTP lists and calls tools on both outside
// surfaces with a client of each protocol generation.
func TestOutsideSurfacesOverHTTP(t *testing.T) {
	root := testRoot(t)
	cases := []struct {
		name    string
		surface toolserver.Surface
		plugins PluginControl
		tools   []string
		call    string
		args    map[string]any
		want    map[string]any
	}{
		{
			name: "configuration", surface: configuration,
			tools: []string{ToolInspectStory, ToolListPlugins, ToolValidateSchema, ToolValidateStory},
			call:  ToolValidateStory, args: map[string]any{"path": "good"},
			want: map[string]any{"path": "good/app.yaml", "ok": true, "errors": []any{}, "warnings": []any{"app.yaml:2:1: providers: ignored"}},
		},
		{
			name: "configuration with plugin controls", surface: configuration, plugins: fakePlugins{},
			tools: []string{ToolPluginStatus, ToolInspectStory, ToolListPlugins, ToolSetPluginEnabled, ToolValidateSchema, ToolValidateStory},
			call:  ToolSetPluginEnabled, args: map[string]any{"alias": "agent.tagger", "enabled": false},
			want: map[string]any{"alias": "agent.tagger", "state": "disabled", "tools": []any{}},
		},
		{
			name: "external", surface: external,
			tools: []string{ToolCreateTask, ToolInspectStory, ToolListPlugins, ToolValidateSchema, ToolValidateStory},
			call:  ToolCreateTask, args: map[string]any{"story": "good/app.yaml", "intents": []any{"submit text=x amount=3"}},
			want: map[string]any{"run_id": "run-1", "state": "intake:submit text=x amount=3", "terminal": false},
		},
		{
			name: "external free text", surface: external,
			tools: []string{ToolCreateTask, ToolInspectStory, ToolListPlugins, ToolValidateSchema, ToolValidateStory},
			call:  ToolCreateTask, args: map[string]any{"story": "good/app.yaml", "say": []any{"I want to submit three"}},
			want: map[string]any{"run_id": "run-1", "state": "intake:said:I want to submit three", "terminal": false,
				"routes": []any{map[string]any{"input": "I want to submit three", "tier": "router", "intent": "submit", "confidence": 0.9}}},
		},
	}
	h := listen(t)
	for _, tc := range cases {
		for _, gen := range generations {
			t.Run(tc.name+"/"+string(gen), func(t *testing.T) {
				s := open(t, h, Config{Profile: mustProfile(t, tc.surface), Root: root,
					LoadStory: fakeLoader, StartRun: fakeStartRun, Plugins: tc.plugins})
				c := connect(t, s.URL(), s.Token(), gen)
				if diff := cmp.Diff(tc.tools, mcptest.ToolNames(t, c)); diff != "" {
					t.Fatalf("tools (-want +got):\n%s", diff)
				}
				text, sc, isErr := c.mustCall(t, tc.call, tc.args)
				if isErr {
					t.Fatalf("%s answered a tool error: %s", tc.call, text)
				}
				if diff := cmp.Diff(tc.want, sc); diff != "" {
					t.Error(diff)
				}
			})
		}
	}
}

// TestCreateTaskRefusesIntentsWithSay: the turns are given one way.
func TestCreateTaskRefusesIntentsWithSay(t *testing.T) {
	h := listen(t)
	s := open(t, h, Config{Profile: mustProfile(t, external), Root: testRoot(t), LoadStory: fakeLoader, StartRun: fakeStartRun})
	c := connect(t, s.URL(), s.Token(), modern)
	text, _, isErr := c.mustCall(t, ToolCreateTask, map[string]any{"story": "good/app.yaml", "intents": []any{"submit"}, "say": []any{"hi"}})
	if want := "intents and say cannot be combined: give the turns as one of them (free text works in intents too)"; !isErr || text != want {
		t.Errorf("answer %q (tool error %v), want the tool error %q", text, isErr, want)
	}
}

// toolNameRE is the form mcp-surfaces.md requires of every exposed name.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestEveryOutsideToolDeclaresAllAnnotations lists the full tool set of the
// external surface with plugin controls and checks the four hints.
func TestEveryOutsideToolDeclaresAllAnnotations(t *testing.T) {
	h := listen(t)
	s := open(t, h, Config{Profile: mustProfile(t, external), Root: testRoot(t), LoadStory: fakeLoader,
		StartRun: fakeStartRun, Plugins: fakePlugins{}})
	c := connect(t, s.URL(), s.Token(), modern)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 7 {
		t.Errorf("%d tools, want 7", len(res.Tools))
	}
	for _, tool := range res.Tools {
		a := tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("tool %s lacks an annotation: %+v", tool.Name, a)
		}
		if !toolNameRE.MatchString(tool.Name) || !strings.HasSuffix(tool.Name, "_kitsoki") {
			t.Errorf("tool name %q", tool.Name)
		}
	}
}

// TestOutsideSessionsRefuseLiveSurfaces: the outside surface never binds a
// run, so a live profile is refused by both constructors.
func TestOutsideSessionsRefuseLiveSurfaces(t *testing.T) {
	h := listen(t)
	for _, surface := range []toolserver.Surface{toolserver.KanbanTask, toolserver.OfficeTask} {
		const want = "acts on a live agent call; the outside surface offers configuration or external"
		if _, err := NewSession(Config{Profile: mustProfile(t, surface)}); err == nil || !strings.Contains(err.Error(), "mcp session: surface "+string(surface)+" "+want) {
			t.Errorf("NewSession(%s): %v", surface, err)
		}
		if _, err := Open(h, Config{Profile: mustProfile(t, surface)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): %v", surface, err)
		}
	}
}

func TestConfigurationTools(t *testing.T) {
	root := testRoot(t)
	h := listen(t)
	s := open(t, h, Config{Profile: mustProfile(t, configuration), Root: root, LoadStory: fakeLoader})
	c := connect(t, s.URL(), s.Token(), modern)

	t.Run("load errors", func(t *testing.T) {
		_, sc, _ := c.mustCall(t, ToolValidateStory, map[string]any{"path": "schemas/verdict.json"})
		want := []any{`app.yaml:3:1: states: unknown state "mrege"`, "app.yaml:9:5: root: is required"}
		if sc["ok"] != false || !cmp.Equal(sc["errors"], want) {
			t.Errorf("validate = %v", sc)
		}
	})
	t.Run("inspect", func(t *testing.T) {
		_, sc, isErr := c.mustCall(t, ToolInspectStory, map[string]any{"path": "good"})
		if isErr {
			t.Fatal(sc)
		}
		if sc["root"] != "intake" || !cmp.Equal(sc["plugins"], []any{"agent.claude", "agent.fixer"}) {
			t.Errorf("inspect = %v", sc)
		}
		if want := map[string]any{"id": "good", "version": "1.0", "title": "", "author": "Ada", "license": "MIT"}; !cmp.Equal(sc["app"], want) {
			t.Errorf("app = %v", sc["app"])
		}
		states := sc["states"].([]any)
		if !cmp.Equal(states[1], map[string]any{"name": "intake", "description": "Waiting.", "intents": []any{"submit"}}) {
			t.Errorf("states = %v", states)
		}
	})
	t.Run("plugins never show env values", func(t *testing.T) {
		text, sc, _ := c.mustCall(t, ToolListPlugins, map[string]any{"path": "good/app.yaml"})
		if strings.Contains(text, "s3cret-value") {
			t.Fatalf("secret value listed: %s", text)
		}
		fixer := sc["plugins"].([]any)[1].(map[string]any)
		if !cmp.Equal(fixer["env_keys"], []any{"API_KEY"}) {
			t.Errorf("fixer = %v", fixer)
		}
	})
	t.Run("schema", func(t *testing.T) {
		_, sc, _ := c.mustCall(t, ToolValidateSchema, map[string]any{"path": "schemas/verdict.json", "instance": map[string]any{"decision": "maybe"}})
		if sc["compiles"] != true || sc["valid"] != false {
			t.Fatalf("schema = %v", sc)
		}
		if v := sc["violations"].([]any); len(v) != 1 || !strings.HasPrefix(v[0].(string), "/decision: ") {
			t.Errorf("violations = %v", v)
		}
		_, sc, _ = c.mustCall(t, ToolValidateSchema, map[string]any{"path": "prompts/audit.md"})
		if sc["compiles"] != false || !strings.Contains(sc["error"].(string), "not valid JSON") {
			t.Errorf("non-schema = %v", sc)
		}
	})
	t.Run("paths stay inside the root", func(t *testing.T) {
		outside := t.TempDir()
		link := filepath.Join(root, "escape-link")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		for path, want := range map[string]string{
			"../tools_test.go": "is outside the served directory",
			"/etc/passwd":      "is outside the served directory",
			"escape-link":      "leads outside the served directory",
			"no/such/file.yml": "no such file or directory",
		} {
			text, _, isErr := c.mustCall(t, ToolValidateStory, map[string]any{"path": path})
			if !isErr || !strings.Contains(text, want) {
				t.Errorf("%s: %q, want %q", path, text, want)
			}
		}
	})
}

const leaked = "sk-live-0123456789abcdef"

// TestStoryToolsMaskTheLoadedStorysSecrets: inspect_story masks the
// secrets of the story it loaded, even on a server configured with none.
func TestStoryToolsMaskTheLoadedStorysSecrets(t *testing.T) {
	loader := func(ctx context.Context, path, workspace string) (*story.Story, error) {
		st, err := fakeLoader(ctx, path, workspace)
		if err != nil {
			return nil, err
		}
		st.States["intake"].Description = "Waiting for " + leaked
		st.Secrets = []string{leaked}
		return st, nil
	}
	h := listen(t)
	s := open(t, h, Config{Profile: mustProfile(t, configuration), Root: testRoot(t), LoadStory: loader})
	c := connect(t, s.URL(), s.Token(), modern)
	text, _, isErr := c.mustCall(t, ToolInspectStory, map[string]any{"path": "good/app.yaml"})
	if isErr || strings.Contains(text, leaked) || !strings.Contains(text, "Waiting for REDACTED") {
		t.Errorf("inspect_story: %s", text)
	}
}

// TestConfiguredSecretsAreMasked: the secrets a session is configured with
// (a --control-mcp run's story) are masked in its tool results.
func TestConfiguredSecretsAreMasked(t *testing.T) {
	h := listen(t)
	s := open(t, h, Config{Profile: mustProfile(t, configuration), Root: testRoot(t), LoadStory: fakeLoader,
		Secrets: []string{"Waiting."}})
	c := connect(t, s.URL(), s.Token(), modern)
	text, _, isErr := c.mustCall(t, ToolInspectStory, map[string]any{"path": "good"})
	if isErr || strings.Contains(text, `"Waiting."`) || !strings.Contains(text, `"description":"REDACTED"`) {
		t.Errorf("inspect_story: %s", text)
	}
}

// TestRegistryGroups: the outside registry enables the configuration group
// on both outside surfaces, external and sessions on external only, and
// nothing on a live surface.
func TestRegistryGroups(t *testing.T) {
	reg, err := Registry(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		surface toolserver.Surface
		want    []string
	}{
		{configuration, []string{GroupConfiguration}},
		{external, []string{GroupConfiguration, GroupExternal, GroupSessions}},
		{toolserver.KanbanTask, nil},
		{toolserver.OfficeTask, nil},
	} {
		if diff := cmp.Diff(tc.want, reg.Enabled(mustProfile(t, tc.surface))); diff != "" {
			t.Errorf("%s: enabled groups (-want +got):\n%s", tc.surface, diff)
		}
	}
}
