package story

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// exits.<name>.requires is the imported story's contract with its
// importer: where it is folded in, each transition into the exit (an arm,
// an on_complete target:) sets every required key in its effects (set:,
// increment:, bind:, nested effects:; the set: of an exit of its own
// import that lands there counts), or the key has a non-zero default.
// Loaded on its own, the story is not held to it (Kitsoki loads its
// process-design-workflow, whose done arm sets no report_path).
func TestExitRequires(t *testing.T) {
	const child = `app: {id: req}
hosts: [host.run]
world:
  pr_url: {type: string, default: ""}
  tries: {type: int, default: 0}
  branch: {type: string, default: main}
exits:
  done: {description: "Shipped.", requires: [pr_url, tries, branch]}
intents: {a: {}, b: {}, c: {}, d: {}, e: {}, f: {}}
root: s
states:
  s:
    on:
      a:
        - target: "@exit:done"
          effects:
            - set: {pr_url: "https://x"}
            - increment: {tries: 1}
      b:
        - target: "@exit:done"
          effects:
            - invoke: host.run
              with: {cmd: "echo x"}
              bind: {pr_url: stdout}
              effects: [{set: {tries: 2}}]
      c:
        - target: "@exit:done"
          effects: [{set: {tries: 1}}]
      d:
        - target: .
          effects:
            - invoke: host.run
              with: {cmd: "sleep 1"}
              background: true
              on_complete:
                - target: "@exit:done"
                  effects: [{set: {tries: 1}}]
      e: [{target: "@exit:done"}]
      f: [{target: inner}]
  inner:
    imports: {}
`
	const leaf = "app: {id: leaf}\nexits: {out: {}, bare: {}}\nintents: {go: {}, quit: {}}\nroot: l\nstates:\n  l:\n    on:\n      go: [{target: \"@exit:out\"}]\n      quit: [{target: \"@exit:bare\"}]\n"
	withImport := strings.Replace(child, "  inner:\n    imports: {}\n", "", 1) +
		"imports:\n  inner:\n    source: ./leaf\n    entry: l\n    exits:\n      out: {to: \"@exit:done\", set: {pr_url: \"x\", tries: 1}}\n      bare: {to: \"@exit:done\"}\n"
	dir := testkit.Tree(t, map[string]string{
		"child/app.yaml":      withImport,
		"child/leaf/app.yaml": leaf,
		"app.yaml":            "app: {id: p}\nroot: main\nstates:\n  main: {}\n  out: {terminal: true}\nimports:\n  x:\n    source: ./child\n    entry: s\n    exits: {done: {to: out}}\n",
	})
	// On its own the story loads.
	if st, err := Load(filepath.Join(dir, "child", "app.yaml"), WithLookupEnv(mapEnv(nil))); err != nil {
		t.Errorf("the story on its own: %v", err)
	} else {
		// exits.<name>.description describes the exit's terminal state.
		if x := st.States[ExitStatePrefix+"done"]; x == nil || !x.Terminal || x.Description != "Shipped." {
			t.Errorf("exit state = %+v", x)
		}
		st.Close()
	}
	got := loadErr(t, filepath.Join(dir, "app.yaml"), nil)
	const msg = `@exit:done requires %s (exits.done.requires), and this transition does not set it: set it in the transition's effects (set:, increment: or bind:), or give it a non-zero default in world:`
	want := []string{
		`child/app.yaml:27:19: ` + strings.Replace(msg, "%s", `"pr_url"`, 1),
		`child/app.yaml:36:27: ` + strings.Replace(msg, "%s", `"pr_url"`, 1),
		`child/app.yaml:38:20: ` + strings.Replace(msg, "%s", `"pr_url", "tries"`, 1),
		`child/leaf/app.yaml:9:23: ` + strings.Replace(msg, "%s", `"pr_url", "tries"`, 1),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
