package story

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// host.starlark.run invokes are checked against their script's sidecar at
// load.
func TestStarlarkLoadChecks(t *testing.T) {
	const head = "app: {id: s}\nworld:\n  n: {type: int, default: 1}\nroot: a\nstates:\n  a:\n    terminal: true\n    on_enter:\n      - invoke: host.starlark.run\n"
	tests := []struct {
		name, with string
		want       string // "" loads
	}{
		{"fits", "        with: {script: s.star, inputs: {n: 3, tag: x}}\n", ""},
		{"templated inputs are checked at call", "        with: {script: s.star, inputs: {n: \"{{ world.n }}\"}}\n", ""},
		{"a templated script is checked at call", "        with: {script: \"{{ world.n }}.star\"}\n", ""},
		{"no inputs, one required", "        with: {script: s.star}\n",
			`app.yaml:10:24: states.a.on_enter[0].with.inputs: script "s.star" requires input "n" (declared in s.star.yaml); add it under with.inputs`},
		{"a list where an int is declared", "        with: {script: s.star, inputs: {n: [1]}}\n",
			`app.yaml:10:44: states.a.on_enter[0].with.inputs.n: input "n" is declared int in s.star.yaml but this literal is list; write a value of type int, or template one: "{{ world.x }}"`},
		{"?? without braces", "        with: {script: s.star, inputs: {n: 3, tag: \"world.t ?? 'x'\"}}\n",
			`app.yaml:10:52: states.a.on_enter[0].with.inputs.tag: "world.t ?? 'x'" is an expression written without {{ }}: the script would get this text, not its value; write "{{ world.t ?? 'x' }}"`},
		{"no script", "        with: {inputs: {n: 1}}\n",
			"app.yaml:10:15: states.a.on_enter[0].with: host.starlark.run needs with.script: the path of a .star file (relative to the story)"},
		{"no with", "        bind: {}\n",
			"app.yaml:9:17: states.a.on_enter[0].invoke: host.starlark.run needs with.script: the path of a .star file (relative to the story)"},
		{"missing script", "        with: {script: gone.star}\n",
			`app.yaml:10:24: states.a.on_enter[0].with.script: cannot read script "gone.star": no such file or directory`},
		{"inputs not a mapping", "        with: {script: s.star, inputs: [1]}\n",
			"app.yaml:10:40: states.a.on_enter[0].with.inputs: with.inputs must be a mapping of input names to values, got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{
				"app.yaml":    head + tt.with,
				"s.star":      "def main(ctx):\n    return {}\n",
				"s.star.yaml": "inputs:\n  n: {type: int, required: true}\n",
			} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Load(filepath.Join(dir, "app.yaml"), WithWorkspace(dir))
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			}
			if got != tt.want {
				t.Errorf("load error:\n  %s\nwant:\n  %s", got, tt.want)
			}
		})
	}
}
