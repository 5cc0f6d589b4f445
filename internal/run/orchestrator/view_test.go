package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const viewStory = `app: {id: views}
root: typed
world:
  name: {type: string, default: "Ada"}
  items: {type: list, default: []}
  money: {type: int, default: 7}
intents:
  go: {}
  pick: {slots: {who: {type: string}}}
states:
  typed:
    description: "Typed"
    view:
      - banner: {text: "HELLO", subtitle: "for {{ world.name }}", color: "#fff"}
      - heading: "Status"
      - kv:
          pairs:
            Name: "{{ world.name }}"
            Money left: "{{ world.money }}"
            A key longer than twenty: "x"
      - prose: "shown only with items"
        when: "world.items"
      - list:
          items:
            - {label: go, hint: "next room"}
            - {label: hidden, when: "false"}
      - code: "a  b"
      - media: {handle: "h#1", kind: video}
      - choice:
          prompt: "Pick"
          items:
            - {label: "Ada", intent: pick, slots: {who: "{{ world.name }}"}, hint: "the first"}
            - {label: "Go on", intent: go}
    on:
      go: [{target: based}]
      pick: [{target: .}]
  based:
    description: "Based"
    view:
      extends: base
      blocks:
        body:
          - prose: "body for {{ world.name }}"
          - kv: {pairs: {K: v}}
    on:
      go: [{target: form}]
  form:
    view:
      - choice:
          mode: form
          prompt: "Compose"
          intent: pick
          template: "Pay {who} {amount} of {left}"
          fields:
            who: {type: string, placeholder: "name"}
            amount: {type: int, default: "{{ world.money }}", max: "{{ world.money }}"}
            left: {type: int, readonly: true, expr: "world.money - 2"}
    on:
      go: [{target: multi}]
  multi:
    view:
      - choice:
          mode: multi
          intent: pick
          slot: who
          items: [{value: a, label: "Alpha"}, {value: b}]
`

const baseView = `{% block status %}[{{ world.name }}]{% endblock %}
{% block heading %}{{ state.description }}{% endblock %}
{% block body %}(empty){% endblock %}
`

// TestTypedViews renders every element kind, the extends form and the
// choice modes to the text the REPL and flows see.
func TestTypedViews(t *testing.T) {
	r := newRig(t, files{"app.yaml": viewStory, "views/base.pongo": baseView})
	want := []string{
		"== HELLO ==\nfor Ada\n\nStatus\n\n" +
			"Name:        Ada\nMoney left:  7\nA key longer than twenty:  x\n\n" +
			"- go  next room\n\na  b\n\n[video] h#1 (h#1)\n\n" +
			"Pick\n1. Ada (pick)  the first\n2. Go on (go)",
		"[Ada]\nBased\nbody for Ada\n\nK:  v",
		"Compose\nPay [who] [7] of 5\n(pick)",
		"1. [ ] Alpha (a)\n2. [ ] b (b)\n(pick: pick values for who)",
	}
	got := []string{r.start.View}
	for range 3 {
		got = append(got, r.do("go").View)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("views (-want +got):\n%s", diff)
	}
}

// TestViewDoc checks the structured view: rendered fields per element,
// guards applied.
func TestViewDoc(t *testing.T) {
	r := newRig(t, files{"app.yaml": viewStory, "views/base.pongo": baseView})
	doc, err := r.sess.ViewDoc()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range doc {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]string{"banner", "heading", "kv", "list", "code", "media", "choice"}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if b := doc[0]; b.Body != "HELLO" || b.Subtitle != "for Ada" || b.Color != "#fff" {
		t.Errorf("banner = %+v", b)
	}
	if diff := cmp.Diff([]ViewPair{{"Name", "Ada"}, {"Money left", "7"}, {"A key longer than twenty", "x"}}, doc[2].Pairs); diff != "" {
		t.Errorf("pairs (-want +got):\n%s", diff)
	}
	if n := len(doc[3].Items); n != 1 {
		t.Errorf("list items = %d, want 1 (the when: false one hidden)", n)
	}
	c := doc[6]
	if c.Choice.Mode != "single" || c.Items[0].Intent != "pick" || !cmp.Equal(c.Items[0].Slots, map[string]any{"who": "Ada"}) {
		t.Errorf("choice = %+v items %+v", c.Choice, c.Items)
	}
	if m := doc[5].Media; m == nil || m.Handle != "h#1" || m.Kind != "video" {
		t.Errorf("media = %+v", m)
	}
}
