package docschema

import (
	"reflect"
	"strings"
)

// FromStruct is the shape of a YAML document decoded into a value of type
// t (with the decoder's KnownFields on): a mapping of t's yaml-tagged
// fields, nested structs, lists and maps shaped the same way. Types in
// shorthand also accept a scalar (a field whose UnmarshalYAML takes a
// plain string too).
func FromStruct(t reflect.Type, shorthand ...reflect.Type) *Shape {
	return fromType(t, shorthand)
}

func fromType(t reflect.Type, shorthand []reflect.Type) *Shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var s *Shape
	switch t.Kind() {
	case reflect.Struct:
		s = &Shape{Keys: []string{}, Props: map[string]*Shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			s.Keys = append(s.Keys, name)
			if c := fromType(f.Type, shorthand); c.Keys != nil || c.Items != nil || c.Values != nil {
				s.Props[name] = c
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Shape{}
		}
		s = List(fromType(t.Elem(), shorthand))
	case reflect.Map:
		s = Map(fromType(t.Elem(), shorthand))
	default:
		return &Shape{}
	}
	for _, sh := range shorthand {
		if sh == t {
			s = ScalarOr(s)
		}
	}
	return s
}
