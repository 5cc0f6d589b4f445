package expr

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTextWorldReads(t *testing.T) {
	src := "Total {{ world.reciept }} for {{ world['city'] }}\n" +
		"{% if world.paid and not x.world.nope %}{{ 'world.quoted' }}{% endif %}" +
		"{# {{ world.comment }} #}{% verbatim %}{{ world.verb }}{% endverbatim %}" +
		"{% for i in world.items %}{{ i.world }}{% endfor %}{{ world.a ?? 'x' }}{{ myworld.b }}"
	tx, err := CompileText(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []WorldRead{{"reciept", 1, 16}, {"city", 1, 41}, {"paid", 2, 13},
		{"items", 2, 162}, {"a", 2, 204}}
	if d := cmp.Diff(want, tx.WorldReads()); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
}

func TestValueResultReads(t *testing.T) {
	v, err := CompileValue("{{ result.stdot }}:{{ result?.ok }} {{ result['code'] }} {{ world.x }}")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range v.ResultReads() {
		keys = append(keys, r.Key)
	}
	if d := cmp.Diff([]string{"stdot", "ok", "code"}, keys); d != "" {
		t.Errorf("result reads (-want +got):\n%s", d)
	}
	if r := v.WorldReads(); len(r) != 1 || r[0].Key != "x" {
		t.Errorf("world reads %v", r)
	}
}
