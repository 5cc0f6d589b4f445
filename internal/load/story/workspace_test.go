package story

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// secret is the content of every file outside the workspace: no message may
// ever quote it.
const secret = "TOPSECRET: do not print"

// wsTree builds, in a temporary directory:
//
//	outside/               files no story may read (secret.yaml, secret.md, s.json, m.yaml)
//	ws/.git/               the git work tree marker
//	ws/shared/             a sibling directory of the stories
//	ws/stories/a/          the story under test (app.yaml written by the test)
//
// and returns the temporary directory and the resolved workspace directory.
func wsTree(t *testing.T, files map[string]string) (tmp, ws string) {
	t.Helper()
	all := map[string]string{
		"outside/secret.yaml":  secret + "\n",
		"outside/secret.md":    secret + "\n",
		"outside/s.json":       `{"description": "` + secret + `"}`,
		"outside/m.yaml":       secret + "\n",
		"ws/.git/HEAD":         "ref: refs/heads/main\n",
		"ws/shared/rooms.yaml": "states:\n  shared_room: {}\n",
		"ws/shared/p.md":       "shared prompt {{ args.x }}\n",
	}
	for k, v := range files {
		all[k] = v
	}
	tmp = testkit.Tree(t, all)
	return tmp, filepath.Join(tmp, "ws")
}

// appWith is a minimal story whose state "start" runs one host.agent.decide
// invoke with the given with: lines, plus extra top-level YAML.
func appWith(with, extra string) string {
	s := "app: {id: ws}\nroot: start\n"
	if with != "" {
		s += "states:\n  start:\n    on_enter:\n      - invoke: host.agent.decide\n        with: {" + with + "}\n"
	} else {
		s += "states:\n  start: {}\n"
	}
	return s + extra
}

func loadDiags(t *testing.T, app string, opts ...Option) []string {
	t.Helper()
	st, err := Load(app, opts...)
	if err == nil {
		st.Close()
		return nil
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load error is %T, want *LoadError: %v", err, err)
	}
	if strings.Contains(err.Error(), "TOPSECRET") {
		t.Errorf("a load error quotes a file outside the workspace:\n%s", err)
	}
	return lines(le.Diagnostics)
}

func TestWorkspaceConfinesStoryFiles(t *testing.T) {
	const hint = " (widen the workspace with --workspace DIR)"
	tests := []struct {
		name  string
		files map[string]string // relative to the temp dir; app.yaml is ws/stories/a/app.yaml
		want  []string          // {TMP} and {WS} are replaced by the directories
	}{
		{
			name:  "include traversal",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("", `include: ["../../../outside/secret.yaml"]`+"\n")},
			want:  []string{`app.yaml:5:11: include[0]: "../../../outside/secret.yaml" is outside the workspace {WS}` + hint},
		},
		{
			name:  "include glob climbing out",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("", `include: ["../../../outside/*.yaml"]`+"\n")},
			want:  []string{`app.yaml:5:11: include[0]: "../../../outside/*.yaml" is outside the workspace {WS}` + hint},
		},
		{
			name:  "include ../* from the workspace root",
			files: map[string]string{"ws/app.yaml": appWith("", "include: ../*\n")},
			want:  []string{`app.yaml:5:10: include: "../*" is outside the workspace {WS}` + hint},
		},
		{
			name:  "absolute glob outside",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("", `include: ["{TMP}/outside/*.yaml"]`+"\n")},
			want:  []string{`app.yaml:5:11: include[0]: "{TMP}/outside/*.yaml" is outside the workspace {WS}` + hint},
		},
		{
			name:  "absolute path",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("", "include: [/etc/passwd]\n")},
			want:  []string{`app.yaml:5:11: include[0]: "/etc/passwd" is outside the workspace {WS}` + hint},
		},
		{
			name: "symlinked include matched by a glob",
			files: map[string]string{
				"ws/stories/a/app.yaml":        appWith("", `include: ["rooms/*.yaml"]`+"\n"),
				"ws/stories/a/rooms/link.yaml": "symlink:outside/secret.yaml",
			},
			want: []string{`app.yaml:5:11: include[0]: include "rooms/*.yaml": "rooms/link.yaml" leads through a symlink to {TMP}/outside/secret.yaml, outside the workspace {WS}` + hint},
		},
		{
			name: "symlinked include named literally",
			files: map[string]string{
				"ws/stories/a/app.yaml":        appWith("", "include: rooms/link.yaml\n"),
				"ws/stories/a/rooms/link.yaml": "symlink:outside/secret.yaml",
			},
			want: []string{`app.yaml:5:10: include: "rooms/link.yaml" leads through a symlink to {TMP}/outside/secret.yaml, outside the workspace {WS}` + hint},
		},
		{
			name: "symlinked directory in a glob",
			files: map[string]string{
				"ws/stories/a/app.yaml": appWith("", `include: ["rooms/*.yaml"]`+"\n"),
				"ws/stories/a/rooms":    "symlink:outside",
			},
			want: []string{`app.yaml:5:11: include[0]: "rooms/*.yaml" leads through a symlink to {TMP}/outside, outside the workspace {WS}` + hint},
		},
		{
			name:  "with.prompt_path traversal",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("prompt_path: ../../../outside/secret.md", "")},
			want:  []string{`app.yaml:7:29: states.start.on_enter[0].with.prompt_path: "../../../outside/secret.md" is outside the workspace {WS}` + hint},
		},
		{
			name:  "with.prompt_path missing outside",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("prompt_path: ../../../outside/none.md", "")},
			want:  []string{`app.yaml:7:29: states.start.on_enter[0].with.prompt_path: "../../../outside/none.md" is outside the workspace {WS}` + hint},
		},
		{
			name:  "inline with.prompt naming an outside file",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("prompt: ../../../outside/secret.md", "")},
			want:  []string{`app.yaml:7:24: states.start.on_enter[0].with.prompt: "../../../outside/secret.md" is outside the workspace {WS}` + hint},
		},
		{
			name:  "inline with.prompt naming an absolute outside file",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("prompt: {TMP}/outside/secret.md", "")},
			want:  []string{`app.yaml:7:24: states.start.on_enter[0].with.prompt: "{TMP}/outside/secret.md" is outside the workspace {WS}` + hint},
		},
		{
			name: "symlinked prompt",
			files: map[string]string{
				"ws/stories/a/app.yaml":     appWith("prompt_path: prompts/p.md", ""),
				"ws/stories/a/prompts/p.md": "symlink:outside/secret.md",
			},
			want: []string{`app.yaml:7:29: states.start.on_enter[0].with.prompt_path: "prompts/p.md" leads through a symlink to {TMP}/outside/secret.md, outside the workspace {WS}` + hint},
		},
		{
			name:  "system_prompt_path traversal",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("", "agents:\n  auditor: {system_prompt_path: ../../../outside/secret.md}\n")},
			want:  []string{`app.yaml:6:33: agents.auditor.system_prompt_path: "../../../outside/secret.md" is outside the workspace {WS}` + hint},
		},
		{
			name: "symlinked system prompt",
			files: map[string]string{
				"ws/stories/a/app.yaml": appWith("", "agents:\n  auditor: {system_prompt_path: sp.md}\n"),
				"ws/stories/a/sp.md":    "symlink:outside/secret.md",
			},
			want: []string{`app.yaml:6:33: agents.auditor.system_prompt_path: "sp.md" leads through a symlink to {TMP}/outside/secret.md, outside the workspace {WS}` + hint},
		},
		{
			name:  "schema traversal",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("prompt: hi, schema: ../../../outside/s.json", "")},
			want:  []string{`app.yaml:7:36: states.start.on_enter[0].with.schema: schema "../../../outside/s.json": path leaves the story directory`},
		},
		{
			name: "symlinked schema",
			files: map[string]string{
				"ws/stories/a/app.yaml": appWith("prompt: hi, schema: s.json", ""),
				"ws/stories/a/s.json":   "symlink:outside/s.json",
			},
			want: []string{`app.yaml:7:36: states.start.on_enter[0].with.schema: schema "s.json": path escapes from parent`},
		},
		{
			name: "manifest outside the workspace and the binary's directory",
			files: map[string]string{
				"ws/stories/a/app.yaml": appWith("", "agent_plugins:\n  agent.p:\n    plugin: subprocess\n    command: ./bin/p\n    manifest: ../../../../outside/m.yaml\n"),
				"ws/stories/a/bin/p":    "#!/bin/sh\n",
			},
			want: []string{`app.yaml:9:15: agent_plugins.agent.p.manifest: manifest "../../../../outside/m.yaml" is outside the workspace {WS}` + hint +
				`; a manifest must be inside the workspace, or beside a plugin binary found in PATH`},
		},
		{
			name: "manifest beside a command path outside the workspace",
			files: map[string]string{
				"ws/stories/a/app.yaml": appWith("", "agent_plugins:\n  agent.p:\n    plugin: subprocess\n    command: {TMP}/outside/p\n    manifest: secret.yaml\n"),
				"outside/p":             "#!/bin/sh\n",
			},
			want: []string{`app.yaml:9:15: agent_plugins.agent.p.manifest: manifest "secret.yaml" is outside the workspace {WS}` + hint +
				`; a manifest must be inside the workspace, or beside a plugin binary found in PATH`},
		},
		{
			name: "sibling files in the same work tree",
			files: map[string]string{
				"ws/stories/a/app.yaml": appWith("prompt_path: ../../shared/p.md", "include: [../../shared/*.yaml]\n"),
			},
		},
		{
			name: "a sibling story's prompt named from a story in a subdirectory",
			files: map[string]string{
				"ws/stories/a/app.yaml":  appWith("prompt: ../b/prompt.md", ""),
				"ws/stories/b/prompt.md": "b's prompt\n",
				"ws/stories/b/app.yaml":  appWith("", ""),
			},
		},
		{
			name:  "inline prompt text that only looks outside",
			files: map[string]string{"ws/stories/a/app.yaml": appWith("prompt: ../../../outside/none.md", "")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp, ws := wsTree(t, nil)
			app := filepath.Join(ws, "stories", "a", "app.yaml")
			for name, content := range tt.files {
				tt.files[name] = strings.ReplaceAll(content, "{TMP}", tmp)
				if strings.HasSuffix(name, "/app.yaml") && strings.Count(name, "/") == 1 {
					app = filepath.Join(tmp, filepath.FromSlash(name))
				}
			}
			testkit.Write(t, tmp, tt.files)
			got := loadDiags(t, app)
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.NewReplacer("{TMP}", tmp, "{WS}", ws).Replace(w))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWorkspaceFlagWidens: without a work tree the story's directory is the
// workspace, so a file beside it is refused until --workspace widens it; a
// --workspace that does not hold the story refuses the story itself.
func TestWorkspaceFlagWidens(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"proj/a/app.yaml":        appWith("prompt_path: ../shared/p.md", "include: ../shared/rooms.yaml\n"),
		"proj/shared/p.md":       "hello\n",
		"proj/shared/rooms.yaml": "states:\n  room: {}\n",
		"other/x":                "",
	})
	app := filepath.Join(tmp, "proj", "a", "app.yaml")
	storyDir := filepath.Join(tmp, "proj", "a")
	const hint = " (widen the workspace with --workspace DIR)"
	want := []string{
		`app.yaml:7:29: states.start.on_enter[0].with.prompt_path: "../shared/p.md" is outside the workspace ` + storyDir + hint,
		`app.yaml:8:10: include: "../shared/rooms.yaml" is outside the workspace ` + storyDir + hint,
	}
	if diff := cmp.Diff(want, loadDiags(t, app)); diff != "" {
		t.Errorf("default workspace (-want +got):\n%s", diff)
	}
	if got := loadDiags(t, app, WithWorkspace(filepath.Join(tmp, "proj"))); got != nil {
		t.Errorf("--workspace proj: %v, want the story to load", got)
	}
	st, err := Load(app, WithWorkspace(filepath.Join(tmp, "proj")))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Workspace.Dir() != filepath.Join(tmp, "proj") {
		t.Errorf("Story.Workspace = %s, want %s", st.Workspace.Dir(), filepath.Join(tmp, "proj"))
	}
	other := filepath.Join(tmp, "other")
	want = []string{`app.yaml: story file "` + app + `" is outside the workspace ` + other + hint}
	if diff := cmp.Diff(want, loadDiags(t, app, WithWorkspace(other))); diff != "" {
		t.Errorf("--workspace other (-want +got):\n%s", diff)
	}
	want = []string{`app.yaml: workspace ` + filepath.Join(tmp, "none") + `: no such file or directory`}
	if diff := cmp.Diff(want, loadDiags(t, app, WithWorkspace(filepath.Join(tmp, "none")))); diff != "" {
		t.Errorf("--workspace missing (-want +got):\n%s", diff)
	}
}

// TestStoryFileSizeLimit: a story file, an included file and a prompt file
// over 16 MiB are refused, naming the file and the limit.
func TestStoryFileSizeLimit(t *testing.T) {
	tmp, ws := wsTree(t, map[string]string{
		"ws/a/app.yaml": appWith("prompt_path: big.md, schema: big.json", "include: big.yaml\nagents:\n  auditor: {system_prompt_path: sp.md}\n"),
		"ws/a/big.json": "",
		"ws/a/sp.md":    "",
		"ws/b/app.yaml": "",
		"ws/a/big.yaml": "",
		"ws/a/big.md":   "",
	})
	for _, name := range []string{"ws/a/big.yaml", "ws/a/big.md", "ws/a/big.json", "ws/a/sp.md", "ws/b/app.yaml"} {
		if err := os.Truncate(filepath.Join(tmp, filepath.FromSlash(name)), workspace.MaxFileSize+1); err != nil {
			t.Fatal(err)
		}
	}
	const limit = " is 16777217 bytes; a story file may be at most 16 MiB (16777216 bytes)"
	want := []string{
		`app.yaml:7:29: states.start.on_enter[0].with.prompt_path: prompt file big.md` + limit,
		`app.yaml:7:45: states.start.on_enter[0].with.schema: schema "big.json": big.json` + limit,
		`app.yaml:10:33: agents.auditor.system_prompt_path: system prompt file sp.md` + limit,
		`big.yaml: big.yaml` + limit,
	}
	if diff := cmp.Diff(want, loadDiags(t, filepath.Join(ws, "a", "app.yaml"))); diff != "" {
		t.Errorf("include, prompt, schema, system prompt (-want +got):\n%s", diff)
	}
	want = []string{`app.yaml: app.yaml is 16777217 bytes; a story file may be at most 16 MiB (16777216 bytes)`}
	if diff := cmp.Diff(want, loadDiags(t, filepath.Join(ws, "b", "app.yaml"))); diff != "" {
		t.Errorf("root file (-want +got):\n%s", diff)
	}
}

// A plugin found through PATH may keep its manifest beside its binary,
// outside the workspace, but not anywhere else.
func TestManifestBesideAPathBinary(t *testing.T) {
	tmp, ws := wsTree(t, map[string]string{
		"pathbin/kitsoki-ws-plugin": "#!/bin/sh\n",
		"pathbin/tools.yaml":        "agent_tools: []\n",
		"ws/stories/a/app.yaml":     appWith("", "agent_plugins:\n  agent.p:\n    plugin: subprocess\n    command: kitsoki-ws-plugin\n    manifest: tools.yaml\n"),
		"ws/stories/b/app.yaml":     appWith("", "agent_plugins:\n  agent.p:\n    plugin: subprocess\n    command: kitsoki-ws-plugin\n    manifest: ../outside/m.yaml\n"),
	})
	if err := os.Chmod(filepath.Join(tmp, "pathbin", "kitsoki-ws-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(tmp, "pathbin"))
	if got := loadDiags(t, filepath.Join(ws, "stories", "a", "app.yaml")); got != nil {
		t.Errorf("manifest beside a PATH binary: %v, want the story to load", got)
	}
	want := []string{`app.yaml:9:15: agent_plugins.agent.p.manifest: manifest "../outside/m.yaml" must be beside the plugin's binary ` +
		filepath.Join(tmp, "pathbin", "kitsoki-ws-plugin") + ` (or inside the workspace ` + ws + `)`}
	if diff := cmp.Diff(want, loadDiags(t, filepath.Join(ws, "stories", "b", "app.yaml"))); diff != "" {
		t.Errorf("manifest climbing out of a PATH binary's directory (-want +got):\n%s", diff)
	}
}
