package orchestrator

import (
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

const includeApp = `app: {id: inc}
world:
  lit: {type: bool, default: true}
root: hall
states:
  hall:
    view:
      extends: base
      blocks:
        body:
          - prose: "A hall."
`

// A base view's {% include "path" %} renders the named file (relative to
// the base view, nested includes relative to their includer) in place,
// with the include tag's whitespace trimming.
func TestBaseViewInclude(t *testing.T) {
	r := newRig(t, files{
		"app.yaml":                    includeApp,
		"views/base.pongo":            "{%- block status -%}{%- include \"partials/status.pongo\" -%}{%- endblock %}\n\n{% block body %}{% endblock -%}",
		"views/partials/status.pongo": "{%- if world.lit -%}Light: on{%- else -%}Light: off{%- endif -%} [{% include \"mark.pongo\" %}]",
		"views/partials/mark.pongo":   "ok",
	})
	v, err := r.sess.View()
	if err != nil {
		t.Fatal(err)
	}
	if want := "Light: on[ok]\n\nA hall."; v != want {
		t.Errorf("view = %q, want %q", v, want)
	}
}

func TestBaseViewIncludeErrors(t *testing.T) {
	tests := []struct{ name, base, want string }{
		{"missing", `{% block body %}{% include "nope.pongo" %}{% endblock %}`,
			`views/base.pongo:1: {% include "nope.pongo" %}: cannot read views/nope.pongo: `},
		{"outside", `{% block body %}{% include "../app.yaml" %}{% endblock %}`,
			`views/base.pongo:1: {% include "../app.yaml" %}: the path must be relative to views and stay inside its directory`},
		{"cycle", "{% block body %}\n{% include \"base.pongo\" %}{% endblock %}",
			`views/base.pongo:2: {% include "base.pongo" %} includes itself: views/base.pongo -> views/base.pongo`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := story.Load(writeStory(t, files{"app.yaml": includeApp, "views/base.pongo": tt.base}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("load error = %v, want it to contain %q", err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), "app.yaml:8:16: states.hall.view.extends: ") {
				t.Errorf("load error = %v, want it placed at the extends: key", err)
			}
		})
	}
}
