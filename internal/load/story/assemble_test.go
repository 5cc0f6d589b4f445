package story

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A template's file references that cannot be put together are load
// errors at the template, naming the reference and why.
func TestAssembleErrors(t *testing.T) {
	got := loadErr(t, "testdata/assemble/bad.yaml", nil)
	want := []string{
		`bad.yaml:6:19: states.a.view[0].template: line 1: {% include "missing.pongo" %}: no such file (looked for views/missing.pongo): file does not exist`,
		`bad.yaml:7:19: states.a.view[1].template: views/loop.pongo:1: {% include "loop.pongo" %} includes itself: views/loop.pongo -> views/loop.pongo`,
		`bad.yaml:8:19: states.a.view[2].template: line 1: {% include world.name %}: the file name must be a quoted string (a story's templates are put together when it loads)`,
		`bad.yaml:9:19: states.a.view[3].template: line 1: {% extends %} must be the template's first tag`,
		`bad.yaml:10:19: states.a.view[4].template: the template: {% block nope %} overrides no block of views/frame.pongo (it declares title)`,
		`bad.yaml:11:19: states.a.view[5].template: line 1: {% import "macros.pongo" %}: views/macros.pongo defines no macro "whisper"`,
		`bad.yaml:12:16: states.a.view[6].prose: line 1: {% include "frame.pongo" only with a=1 %}: only ends the tag (include "f" with k=v only)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}

// A prompt file's references resolve along the prompt search path: a
// shared fragment through @shared/, and, with an overlay, the overlay's
// file of the same name, which extends the story's own through @story/.
func TestPromptSearchPath(t *testing.T) {
	const dir = "../../check/kitsokiformat/testdata/templates"
	env := map[string]any{"world": map[string]any{"loaves": 4}}
	render := func(t *testing.T, opts ...Option) string {
		t.Helper()
		s, err := Load(dir+"/app.yaml", opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		p := s.Prompts["prompts/note.md"]
		if p == nil {
			t.Fatalf("prompt not compiled; prompts: %v", s.Prompts)
		}
		out, err := p.Render(env)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if got, want := render(t), "Write a short note for the counter. Keep it warm and brief.\nThere are 4 loaves."; got != want {
		t.Errorf("story prompt = %q, want %q", got, want)
	}
	got := render(t, WithPromptOverlay(dir+"/overlay"))
	if want := "Write a short note for the counter. Keep it warm and brief.\nThere are 4 loaves.\nMention the rye."; got != want {
		t.Errorf("overlaid prompt = %q, want %q", got, want)
	}
}

// {% include "F" with k=v only %} renders F with pongo2's include: F sees
// its with pairs and nothing of the including template (world renders
// empty there); a bare only (Django's form) passes F nothing. Without
// only, F sees the includer's context and the with pairs.
func TestIncludeOnly(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml": "app: {id: inc}\nworld:\n  n: {type: int, default: 7}\nroot: s\nstates:\n  s:\n    view:\n" +
			"      - prose: '{% include \"card.pongo\" with name=\"Ada\" count=world.n only %}'\n" +
			"      - prose: '{% include \"card.pongo\" only %}'\n" +
			"      - prose: '{% include \"card.pongo\" with name=\"Bo\" count=1 %}'\n" +
			"      - prose: '{%- include \"card.pongo\" with name=\"Cy\" count=2 only -%} !'\n",
		"views/card.pongo": "{{ name ?? 'nobody' }}×{{ count ?? 0 }} world={{ world.n }}",
	})
	st := load(t, filepath.Join(dir, "app.yaml"), nil)
	env := expr.Env{"world": map[string]any{"n": 7}}
	var got []string
	for _, el := range st.States["s"].ViewDoc.Elements {
		out, err := el.Body.Render(env)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out)
	}
	want := []string{"Ada×7 world=", "nobody×0 world=", "Bo×1 world=7", "Cy×2 world=!"} // -%} trims the space after the tag
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("renders (-want +got):\n%s", d)
	}
}
