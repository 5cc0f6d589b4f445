package testrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const wsStory = "app: {id: w}\nroot: s\nstates:\n  s: {}\n"

// runFlowsIn runs the fixtures of app (its flows/ directory) and returns
// the setup error, "" when the flows ran.
func runFlowsIn(t *testing.T, app string, opts ...FlowOption) string {
	t.Helper()
	fxs, err := LoadFixtures(app, "")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(append([]FlowOption{WithFlowGetenv(testkit.NoEnv)}, opts...)...)
	defer r.Close()
	rep, err := firstSetupError(r, fxs)
	if err != nil {
		if strings.Contains(err.Error(), "TOPSECRET") {
			t.Errorf("a setup error quotes a file outside the workspace: %v", err)
		}
		return err.Error()
	}
	if !rep.OK() {
		t.Errorf("flows ran but failed: %s", report(rep.Results, true))
	}
	return ""
}

// The files a flow fixture names — its app:, its host_cassette: — stay
// inside the workspace of the story the fixtures were loaded for.
func TestFlowFilesStayInTheWorkspace(t *testing.T) {
	const hint = " (widen the workspace with --workspace DIR)"
	cassette := "kind: host_cassette\nepisodes: []\n"
	tests := []struct {
		name    string
		fixture string
		files   map[string]string
		want    string // {TMP}, {WS}, {F} (the fixture file) are replaced
	}{
		{
			name:    "app traversal",
			fixture: "test_kind: flow\napp: ../../../../outside/app.yaml\n",
			want:    `{F}:2:6: app: "../../../../outside/app.yaml" is outside the workspace {WS}` + hint,
		},
		{
			name:    "absolute app",
			fixture: "test_kind: flow\napp: {TMP}/outside/app.yaml\n",
			want:    `{F}:2:6: app: "{TMP}/outside/app.yaml" is outside the workspace {WS}` + hint,
		},
		{
			name:    "host_cassette traversal",
			fixture: "test_kind: flow\nhost_cassette: ../../../../outside/c.yaml\n",
			want:    `{F}:2:16: host_cassette: "../../../../outside/c.yaml" is outside the workspace {WS}` + hint,
		},
		{
			name:    "symlinked cassette",
			fixture: "test_kind: flow\nhost_cassette: c.yaml\n",
			files:   map[string]string{"ws/stories/a/flows/c.yaml": "symlink:outside/c.yaml"},
			want:    `{F}:2:16: host_cassette: "c.yaml" leads through a symlink to {TMP}/outside/c.yaml, outside the workspace {WS}` + hint,
		},
		{
			name:    "starlark_http_cassette traversal",
			fixture: "test_kind: flow\nstarlark_http_cassette: ../../../../outside/c.yaml\n",
			want:    `{F}:2:25: starlark_http_cassette: "../../../../outside/c.yaml" is outside the workspace {WS}` + hint,
		},
		{
			name:    "malformed starlark_http_cassette",
			fixture: "test_kind: flow\nstarlark_http_cassette: h.yaml\n",
			files:   map[string]string{"ws/stories/a/flows/h.yaml": "kind: http_cassette\nexchanges:\n  - response: {status: 200}\n"},
			want:    `f.yaml: starlark_http_cassette: http cassette {TMP}/ws/stories/a/flows/h.yaml: exchanges[0]: give exactly one of request: (a recorded request) or match: (a selector)`,
		},
		{
			name:    "sibling story and cassette in the same work tree",
			fixture: "test_kind: flow\napp: ../../b/app.yaml\nhost_cassette: ../../b/c.yaml\n",
			files:   map[string]string{"ws/stories/b/app.yaml": wsStory, "ws/stories/b/c.yaml": cassette},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{
				"ws/.git/HEAD":          "ref: refs/heads/main\n",
				"ws/stories/a/app.yaml": wsStory,
				"outside/app.yaml":      "TOPSECRET\n",
				"outside/c.yaml":        "TOPSECRET\n",
			}
			for k, v := range tt.files {
				files[k] = v
			}
			tmp := testkit.Tree(t, files)
			fixture := filepath.Join(tmp, "ws", "stories", "a", "flows", "f.yaml")
			if err := os.MkdirAll(filepath.Dir(fixture), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(fixture, []byte(strings.ReplaceAll(tt.fixture, "{TMP}", tmp)), 0o644); err != nil {
				t.Fatal(err)
			}
			got := runFlowsIn(t, filepath.Join(tmp, "ws", "stories", "a", "app.yaml"))
			want := strings.NewReplacer("{TMP}", tmp, "{WS}", filepath.Join(tmp, "ws"), "{F}", fixture).Replace(tt.want)
			if got != want {
				t.Errorf("setup error:\n  %s\nwant:\n  %s", got, want)
			}
		})
	}
}

// Without a work tree the story's directory is the workspace; a sibling
// story is refused until WithFlowWorkspace (--workspace) widens it, and the
// story loads with that workspace too (its include of ../shared works).
func TestFlowWorkspaceWidens(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"proj/a/app.yaml":        wsStory,
		"proj/a/flows/f.yaml":    "test_kind: flow\napp: ../../b/app.yaml\n",
		"proj/b/app.yaml":        wsStory + "include: ../shared/more.yaml\n",
		"proj/shared/more.yaml":  "states:\n  t: {}\n",
		"proj/a/flows/readme.md": "",
	})
	app := filepath.Join(tmp, "proj", "a", "app.yaml")
	want := filepath.Join(tmp, "proj", "a", "flows", "f.yaml") + `:2:6: app: "../../b/app.yaml" is outside the workspace ` +
		filepath.Join(tmp, "proj", "a") + " (widen the workspace with --workspace DIR)"
	if got := runFlowsIn(t, app); got != want {
		t.Errorf("default workspace:\n  %s\nwant:\n  %s", got, want)
	}
	if got := runFlowsIn(t, app, WithFlowWorkspace(filepath.Join(tmp, "proj"))); got != "" {
		t.Errorf("--workspace proj: %s, want the flow to run", got)
	}
	// The story is loaded with the same workspace: narrowed to b, its
	// include of ../shared is refused.
	b := filepath.Join(tmp, "proj", "b")
	want = `f.yaml: story ` + filepath.Join(b, "app.yaml") + `: app.yaml:5:10: include: "../shared/more.yaml" is outside the workspace ` +
		b + " (widen the workspace with --workspace DIR)"
	if got := runFlowsIn(t, app, WithFlowWorkspace(b)); got != want {
		t.Errorf("--workspace proj/b:\n  %s\nwant:\n  %s", got, want)
	}
}

// A fixture the caller points at outside the story's workspace may name
// files under its own directory: a cassette beside it, or a story beside it
// (which then loads in its own workspace).
func TestFlowFixtureNamesFilesBesideItself(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"proj/app.yaml":          wsStory,
		"elsewhere/f.yaml":       "test_kind: flow\nhost_cassette: c.yaml\n",
		"elsewhere/c.yaml":       "kind: host_cassette\nepisodes: []\n",
		"elsewhere/g.yaml":       "test_kind: flow\napp: own/app.yaml\n",
		"elsewhere/own/app.yaml": wsStory,
		"elsewhere/h.yaml":       "test_kind: flow\nhost_cassette: ../outside.yaml\n",
		"outside.yaml":           "TOPSECRET\n",
	})
	app := filepath.Join(tmp, "proj", "app.yaml")
	run := func(name string) string {
		t.Helper()
		fxs, err := LoadFixtures(app, filepath.Join(tmp, "elsewhere", name))
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(WithFlowGetenv(testkit.NoEnv))
		defer r.Close()
		if _, err := firstSetupError(r, fxs); err != nil {
			return err.Error()
		}
		return ""
	}
	if got := run("f.yaml"); got != "" {
		t.Errorf("cassette beside the fixture: %s", got)
	}
	if got := run("g.yaml"); got != "" {
		t.Errorf("story beside the fixture: %s", got)
	}
	want := filepath.Join(tmp, "elsewhere", "h.yaml") + `:2:16: host_cassette: "../outside.yaml" is outside the workspace ` +
		filepath.Join(tmp, "proj") + " (widen the workspace with --workspace DIR)"
	if got := run("h.yaml"); got != want {
		t.Errorf("cassette above the fixture:\n  %s\nwant:\n  %s", got, want)
	}
}
