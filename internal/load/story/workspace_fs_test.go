package story

import (
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// memTree is an in-memory story tree for WithFS, mounted at a directory
// that does not exist on disk:
//
//	shared/          files beside the stories (rooms.yaml, p.md, m.yaml, s.json)
//	stories/a/       the story under test (app.yaml given by the test)
func memTree(t *testing.T, files map[string]string) (fstest.MapFS, string) {
	t.Helper()
	fsys := fstest.MapFS{
		"shared/rooms.yaml": {Data: []byte("states:\n  shared_room: {}\n")},
		"shared/p.md":       {Data: []byte("shared prompt {{ args.x }}\n")},
		"shared/m.yaml":     {Data: []byte("agent_tools: []\n")},
		"shared/s.json":     {Data: []byte(`{"type": "object"}`)},
	}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	return fsys, filepath.Join(t.TempDir(), "mem") // never created
}

// TestWorkspaceWithFS: a story loaded through WithFS is confined like one
// on disk, with the same messages: the mount directory is the workspace,
// WithWorkspace narrows it to a directory of the fs.FS, and paths are
// checked lexically.
func TestWorkspaceWithFS(t *testing.T) {
	const hint = " (widen the workspace with --workspace DIR)"
	plugin := "agent_plugins:\n  agent.p:\n    plugin: subprocess\n    command: ./bin/p\n    manifest: ../../../shared/m.yaml\n"
	siblings := appWith("prompt_path: ../../shared/p.md, schema: s.json",
		"include: [../../shared/r*.yaml]\nagents:\n  auditor: {system_prompt_path: ../../shared/p.md}\n"+plugin)
	tests := []struct {
		name      string
		app       string
		workspace string   // relative to the mount; "" for none
		want      []string // {MOUNT} is the mount directory; nil: the story loads
	}{
		{
			name: "the mount is the workspace: siblings are read from the fs.FS",
			app:  siblings,
		},
		{
			name: "include outside the mount",
			app:  appWith("", "include: [../../../x.yaml]\n"),
			want: []string{`app.yaml:5:11: include[0]: "../../../x.yaml" is outside the workspace {MOUNT}` + hint},
		},
		{
			name:      "include outside a narrowed workspace",
			app:       appWith("", "include: [../../shared/rooms.yaml]\n"),
			workspace: "stories",
			want:      []string{`app.yaml:5:11: include[0]: "../../shared/rooms.yaml" is outside the workspace {MOUNT}/stories` + hint},
		},
		{
			name:      "include glob climbing out of a narrowed workspace",
			app:       appWith("", "include: [../../shared/*.yaml]\n"),
			workspace: "stories",
			want:      []string{`app.yaml:5:11: include[0]: "../../shared/*.yaml" is outside the workspace {MOUNT}/stories` + hint},
		},
		{
			name:      "with.prompt_path outside",
			app:       appWith("prompt_path: ../../shared/p.md", ""),
			workspace: "stories",
			want:      []string{`app.yaml:7:29: states.start.on_enter[0].with.prompt_path: "../../shared/p.md" is outside the workspace {MOUNT}/stories` + hint},
		},
		{
			name:      "inline with.prompt naming a file outside",
			app:       appWith("prompt: ../../shared/p.md", ""),
			workspace: "stories",
			want:      []string{`app.yaml:7:24: states.start.on_enter[0].with.prompt: "../../shared/p.md" is outside the workspace {MOUNT}/stories` + hint},
		},
		{
			name:      "inline prompt text that only looks outside",
			app:       appWith("prompt: ../../shared/none.md", ""),
			workspace: "stories",
		},
		{
			name:      "system_prompt_path outside",
			app:       appWith("", "agents:\n  auditor: {system_prompt_path: ../../shared/p.md}\n"),
			workspace: "stories",
			want:      []string{`app.yaml:6:33: agents.auditor.system_prompt_path: "../../shared/p.md" is outside the workspace {MOUNT}/stories` + hint},
		},
		{
			name:      "manifest outside",
			app:       appWith("", plugin),
			workspace: "stories",
			want: []string{`app.yaml:9:15: agent_plugins.agent.p.manifest: manifest "../../../shared/m.yaml" is outside the workspace {MOUNT}/stories` + hint +
				`; a manifest must be inside the workspace, or beside a plugin binary found in PATH`},
		},
		{
			name: "schema outside the story directory",
			app:  appWith("prompt: hi, schema: ../../shared/s.json", ""),
			want: []string{`app.yaml:7:36: states.start.on_enter[0].with.schema: schema "../../shared/s.json": path leaves the story directory`},
		},
		{
			name:      "a workspace that does not hold the story",
			app:       appWith("", ""),
			workspace: "shared",
			want:      []string{`app.yaml: story file "{MOUNT}/stories/a/app.yaml" is outside the workspace {MOUNT}/shared` + hint},
		},
		{
			name:      "a workspace that is not a directory of the fs.FS",
			app:       appWith("", ""),
			workspace: "none",
			want:      []string{`app.yaml: workspace {MOUNT}/none: file does not exist`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, mount := memTree(t, map[string]string{"stories/a/app.yaml": tt.app, "stories/a/s.json": `{"type": "object"}`})
			opts := []Option{WithFS(fsys, mount)}
			if tt.workspace != "" {
				opts = append(opts, WithWorkspace(filepath.Join(mount, tt.workspace)))
			}
			got := loadDiags(t, filepath.Join(mount, "stories", "a", "app.yaml"), opts...)
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "{MOUNT}", mount))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("everything is read from the fs.FS", func(t *testing.T) {
		fsys, mount := memTree(t, map[string]string{"stories/a/app.yaml": siblings, "stories/a/s.json": `{"type": "object"}`})
		st, err := Load(filepath.Join(mount, "stories", "a", "app.yaml"), WithFS(fsys, mount))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, ok := st.States["shared_room"]; !ok {
			t.Errorf("the included state is missing; states: %v", st.States)
		}
		if _, ok := st.Prompts["../../shared/p.md"]; !ok {
			t.Errorf("the prompt file is missing; prompts: %v", st.Prompts)
		}
		if _, ok := st.Schemas["s.json"]; !ok {
			t.Errorf("the schema is missing; schemas: %v", st.Schemas)
		}
		if p := st.Agents["auditor"]; p == nil || p.SystemPrompt != "shared prompt {{ args.x }}\n" {
			t.Errorf("system prompt of auditor = %+v", p)
		}
		if d := st.Plugins["agent.p"]; d.Manifest != filepath.Join(mount, "shared", "m.yaml") {
			t.Errorf("manifest = %q, want the one in the fs.FS", d.Manifest)
		}
	})
	t.Run("Story.Workspace", func(t *testing.T) {
		fsys, mount := memTree(t, map[string]string{"stories/a/app.yaml": appWith("", "")})
		st, err := Load(filepath.Join(mount, "stories", "a", "app.yaml"), WithFS(fsys, mount), WithWorkspace(filepath.Join(mount, "stories")))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if got, want := st.Workspace.Dir(), filepath.Join(mount, "stories"); got != want {
			t.Errorf("Story.Workspace = %s, want %s", got, want)
		}
		if got, gotMount := st.Workspace.FS(); got == nil || gotMount != mount {
			t.Errorf("Story.Workspace reads %v mounted at %q, want the fs.FS at %s", got, gotMount, mount)
		}
	})
}

// TestStoryFileSizeLimitWithFS: the 16 MiB limit holds for files read
// through WithFS, with the same messages as on disk.
func TestStoryFileSizeLimitWithFS(t *testing.T) {
	big := make([]byte, workspace.MaxFileSize+1)
	fsys, mount := memTree(t, map[string]string{
		"a/app.yaml": appWith("prompt_path: big.md, schema: big.json", "include: big.yaml\nagents:\n  auditor: {system_prompt_path: sp.md}\n"),
	})
	for _, name := range []string{"a/big.yaml", "a/big.md", "a/big.json", "a/sp.md", "b/app.yaml"} {
		fsys[name] = &fstest.MapFile{Data: big}
	}
	const limit = " is 16777217 bytes; a story file may be at most 16 MiB (16777216 bytes)"
	want := []string{
		`app.yaml:7:29: states.start.on_enter[0].with.prompt_path: prompt file big.md` + limit,
		`app.yaml:7:45: states.start.on_enter[0].with.schema: schema "big.json": big.json` + limit,
		`app.yaml:10:33: agents.auditor.system_prompt_path: system prompt file sp.md` + limit,
		`big.yaml: big.yaml` + limit,
	}
	if diff := cmp.Diff(want, loadDiags(t, filepath.Join(mount, "a", "app.yaml"), WithFS(fsys, mount))); diff != "" {
		t.Errorf("include, prompt, schema, system prompt (-want +got):\n%s", diff)
	}
	want = []string{`app.yaml: app.yaml` + limit}
	if diff := cmp.Diff(want, loadDiags(t, filepath.Join(mount, "b", "app.yaml"), WithFS(fsys, mount))); diff != "" {
		t.Errorf("root file (-want +got):\n%s", diff)
	}
}
