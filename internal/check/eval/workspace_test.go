package eval

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/routes"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const wsApp = `app: {id: ws-eval}
root: s
states:
  s:
    on_enter:
      - invoke: host.agent.decide
        id: pick
        with: {prompt: "Pick one."}
`

func dataset(app string) string {
	return "kind: agent_eval\napp: " + app + "\ncall: pick\ncomparator: exact\nexamples:\n  - {name: e1, expect: {x: 1}}\n"
}

// A dataset's app: and the dataset itself stay inside one workspace: the
// story's (the work tree enclosing the app, else its directory), or the
// one --workspace names.
func TestDatasetStaysInTheWorkspace(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"ws/.git/HEAD":                "",
		"ws/stories/a/app.yaml":       wsApp,
		"ws/stories/b/app.yaml":       wsApp,
		"outside/app.yaml":            "TOPSECRET\n",
		"ws/stories/a/evals/up.yaml":  dataset("../../../../outside/app.yaml"),
		"ws/stories/a/evals/sib.yaml": dataset("../../b/app.yaml"),
		"ws/stories/a/evals/own.yaml": dataset("../app.yaml"),
		"plain/a/app.yaml":            wsApp,
		"plain/b/evals/x.yaml":        dataset("../../a/app.yaml"),
	})
	const hint = " (widen the workspace with --workspace DIR)"
	ds := func(p string) string { return filepath.Join(tmp, filepath.FromSlash(p)) }
	tests := []struct {
		name, path, workspace string
		want                  []string
	}{
		{"own story", "ws/stories/a/evals/own.yaml", "", nil},
		{"sibling story in the work tree", "ws/stories/a/evals/sib.yaml", "", nil},
		{"app outside: its workspace does not hold the dataset", "ws/stories/a/evals/up.yaml", "",
			[]string{ds("ws/stories/a/evals/up.yaml") + `:2:6: app: "../../../../outside/app.yaml" names a story whose workspace ` +
				ds("outside") + ` does not hold this dataset` + hint}},
		{"app outside an explicit workspace", "ws/stories/a/evals/up.yaml", "ws",
			[]string{ds("ws/stories/a/evals/up.yaml") + `:2:6: app: "../../../../outside/app.yaml" is outside the workspace ` + ds("ws") + hint}},
		{"no work tree: another story's directory", "plain/b/evals/x.yaml", "",
			[]string{ds("plain/b/evals/x.yaml") + `:2:6: app: "../../a/app.yaml" names a story whose workspace ` +
				ds("plain/a") + ` does not hold this dataset` + hint}},
		{"no work tree, widened", "plain/b/evals/x.yaml", "plain", nil},
		{"dataset outside an explicit workspace", "plain/b/evals/x.yaml", "plain/a",
			[]string{ds("plain/b/evals/x.yaml") + `: dataset "` + ds("plain/b/evals/x.yaml") + `" is outside the workspace ` + ds("plain/a") + hint}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []CheckOption
			if tt.workspace != "" {
				opts = append(opts, WithWorkspace(ds(tt.workspace)))
			}
			c, err := Check(ds(tt.path), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := c.Errors
			if strings.Contains(strings.Join(got, "\n"), "TOPSECRET") {
				t.Errorf("an error quotes a file outside the workspace: %v", got)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if tt.want == nil && c.Story == nil {
				t.Error("the story did not load")
			}
		})
	}
}

// A selection: pin's evidence outside the workspace is never read.
func TestPinEvidenceStaysInTheWorkspace(t *testing.T) {
	tmp := testkit.Tree(t, map[string]string{
		"ws/app.yaml": strings.Replace(wsApp, `with: {prompt: "Pick one."}`,
			"with: {prompt: \"Pick one.\"}\n        selection: {profile: agent.claude, model: m, evidence: ../outside/latest.json}", 1),
		"outside/latest.json": `{"eval": "TOPSECRET"}`,
	})
	st, err := story.Load(filepath.Join(tmp, "ws", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := routes.Resolve(st)
	want := `evidence "../outside/latest.json" is outside the workspace ` + filepath.Join(tmp, "ws") + " (widen the workspace with --workspace DIR)"
	want = `pin for call "pick" not applied: ` + want + `; using the default route (claude)`
	if diff := cmp.Diff([]string{want}, p.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
