package docschema

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShapeJSON(t *testing.T) {
	any0 := map[string]any{}
	scalars := map[string]any{"type": scalarTypes}
	cond := Obj([]string{"type", "x_*"}, nil)
	cond.When, cond.WhenIs, cond.Required = "type", "flow", "type"
	for _, c := range []struct {
		name string
		s    *Shape
		want map[string]any
	}{
		{"free", &Shape{}, any0},
		{"ref", Ref("state"), map[string]any{"$ref": "#/$defs/state"}},
		{"object", Obj([]string{"a", "b"}, map[string]*Shape{"b": List(&Shape{})}), map[string]any{
			"type": "object", "additionalProperties": false,
			"properties": map[string]any{"a": any0, "b": map[string]any{"type": "array", "items": any0}}}},
		{"map or scalar", ScalarOr(Map(&Shape{})), map[string]any{"anyOf": []any{
			map[string]any{"type": "object", "additionalProperties": any0}, scalars}}},
		{"conditional with a prefix pattern", cond, map[string]any{
			"if": map[string]any{"type": "object", "required": []any{"type"}, "properties": map[string]any{"type": map[string]any{"const": "flow"}}},
			"then": map[string]any{"type": "object", "additionalProperties": false, "required": []any{"type"},
				"properties": map[string]any{"type": any0}, "patternProperties": map[string]any{"^x_": any0}}}},
	} {
		if diff := cmp.Diff(c.want, c.s.JSON()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

type inner struct {
	N int `yaml:"n"`
}
type outer struct {
	Name  string           `yaml:"name"`
	In    inner            `yaml:"in"`
	List  []inner          `yaml:"list"`
	ByKey map[string]inner `yaml:"by_key"`
	Skip  string           `yaml:"-"`
	Short inner            `yaml:"short"`
}

func TestFromStruct(t *testing.T) {
	s := FromStruct(reflect.TypeFor[outer]())
	if diff := cmp.Diff([]string{"name", "in", "list", "by_key", "short"}, s.Keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if s.Props["list"].Items == nil || s.Props["by_key"].Values == nil || s.Props["in"].Keys[0] != "n" {
		t.Errorf("nested shapes: %+v", s.Props)
	}
	if s.Props["name"] != nil {
		t.Errorf("a scalar field got a shape: %+v", s.Props["name"])
	}
	sh := FromStruct(reflect.TypeFor[outer](), reflect.TypeFor[inner]())
	if !sh.Props["short"].Scalar || !sh.Props["list"].Items.Scalar {
		t.Error("a shorthand type does not accept a scalar")
	}
}
