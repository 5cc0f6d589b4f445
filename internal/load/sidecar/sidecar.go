// Package sidecar reads the typed interface of a host.starlark.run script:
// the <script>.star.yaml file beside it, declaring the script's inputs and
// outputs. It imports nothing of kitsoki, so the story loader checks invokes
// against a sidecar at load and the handler checks values at call with the
// same rules.
package sidecar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// Suffix is appended to a script's path to name its sidecar.
const Suffix = ".yaml"

// types are the value types a sidecar may declare; "" means any.
var types = []string{"string", "int", "number", "bool", "object", "list", "any"}

// Field is one declared input or output.
type Field struct {
	Name     string
	Type     string // a sidecar type; an empty one is normalised to "any"
	Required bool   // inputs only
	Line     int    // where the field is declared in the sidecar
	Col      int
}

// Sidecar is a script's declared interface.
type Sidecar struct {
	Inputs  []Field // sorted by name
	Outputs []Field // sorted by name
}

// Input returns the declared input name.
func (s *Sidecar) Input(name string) (Field, bool) { return find(s.Inputs, name) }

// Output returns the declared output name.
func (s *Sidecar) Output(name string) (Field, bool) { return find(s.Outputs, name) }

func find(fs []Field, name string) (Field, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// ReservedOutput is the key the handler adds to every result (the script's
// HTTP exchanges); a sidecar may not declare it.
const ReservedOutput = "__http_exchanges"

// Error is a malformed sidecar: File:Line:Col, key path, what is wrong.
type Error struct {
	File      string
	Line, Col int
	Path      string
	Msg       string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Path != "" {
		b.WriteString(": " + e.Path)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Parse reads a sidecar's content; name is how errors name the file.
// Unknown keys, unknown types and a declared __http_exchanges output are
// errors.
func Parse(data []byte, name string) (*Sidecar, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Sidecar{}, nil
		}
		return nil, &Error{File: name, Msg: "not valid YAML: " + err.Error()}
	}
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return nil, &Error{File: name, Msg: err.Error()}
	}
	if len(doc.Content) == 0 {
		return &Sidecar{}, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return &Sidecar{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Line, Col: root.Column, Msg: "a sidecar is a mapping with inputs: and outputs:"}
	}
	sc := &Sidecar{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		var err error
		switch k.Value {
		case "inputs":
			sc.Inputs, err = fields(v, name, "inputs", true)
		case "outputs":
			sc.Outputs, err = fields(v, name, "outputs", false)
		default:
			err = &Error{File: name, Line: k.Line, Col: k.Column, Path: k.Value, Msg: "unknown key (a sidecar has inputs: and outputs:)"}
		}
		if err != nil {
			return nil, err
		}
	}
	if f, ok := sc.Output(ReservedOutput); ok {
		return nil, &Error{File: name, Line: f.Line, Col: f.Col, Path: "outputs." + ReservedOutput,
			Msg: "this output is reserved (the handler adds the script's HTTP exchanges under it); rename it"}
	}
	return sc, nil
}

func fields(n *yaml.Node, file, block string, inputs bool) ([]Field, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: n.Line, Col: n.Column, Path: block, Msg: "expected a mapping of names to {type: …}"}
	}
	var out []Field
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := block + "." + k.Value
		f := Field{Name: k.Value, Line: k.Line, Col: k.Column}
		if v.Kind != yaml.MappingNode {
			if !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
				return nil, &Error{File: file, Line: v.Line, Col: v.Column, Path: path, Msg: "expected {type: <T>" + reqHint(inputs) + "}"}
			}
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			fk, fv := v.Content[j], v.Content[j+1]
			switch {
			case fk.Value == "type":
				t := fv.Value
				if t != "" && !slices.Contains(types, t) {
					return nil, &Error{File: file, Line: fv.Line, Col: fv.Column, Path: path + ".type",
						Msg: fmt.Sprintf("unknown type %q (want one of %s)", t, strings.Join(types, ", "))}
				}
				f.Type = t
			case fk.Value == "required" && inputs:
				if fv.Tag != "!!bool" {
					return nil, &Error{File: file, Line: fv.Line, Col: fv.Column, Path: path + ".required", Msg: "must be true or false"}
				}
				f.Required = fv.Value == "true"
			case fk.Value == "description":
			default:
				return nil, &Error{File: file, Line: fk.Line, Col: fk.Column, Path: path + "." + fk.Value,
					Msg: "unknown key (a field has type:" + reqHint(inputs) + " and description:)"}
			}
		}
		if f.Type == "" {
			f.Type = "any"
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func reqHint(inputs bool) string {
	if inputs {
		return ", required: <bool>"
	}
	return ""
}

// Fits reports whether v, a Go value as kitsoki carries it (nil, bool,
// string, int/int64/float64, []any, map[string]any), has type t. int and
// number both accept any number, as numbers cross YAML, JSON and Starlark
// in either form.
func Fits(t string, v any) bool {
	switch t {
	case "", "any":
		return true
	case "string":
		_, ok := v.(string)
		return ok
	case "bool":
		_, ok := v.(bool)
		return ok
	case "int", "number":
		switch x := v.(type) {
		case int, int64, int32, uint64, uint32, uint:
			return true
		case float64:
			return !math.IsNaN(x)
		case float32:
			return true
		}
		return false
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "list":
		_, ok := v.([]any)
		return ok
	}
	return false
}

// TypeName names v's type in the words of a sidecar, for messages.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case int, int64, int32, uint64, uint32, uint:
		return "int"
	case float64, float32:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// CheckInputs checks the inputs of one call: every required input is
// present, and every declared input has its type. Undeclared inputs pass.
func (s *Sidecar) CheckInputs(in map[string]any) error {
	var errs []string
	for _, f := range s.Inputs {
		v, ok := in[f.Name]
		switch {
		case !ok || v == nil:
			if f.Required {
				errs = append(errs, fmt.Sprintf("input %q is required (declared %s) but missing", f.Name, f.Type))
			}
		case !Fits(f.Type, v):
			errs = append(errs, fmt.Sprintf("input %q must be %s, got %s %s", f.Name, f.Type, TypeName(v), brief(v)))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// CheckOutputs checks what a script returned: when outputs are declared,
// each is returned with its type and nothing else is.
func (s *Sidecar) CheckOutputs(out map[string]any) error {
	if len(s.Outputs) == 0 {
		return nil
	}
	var errs []string
	for _, f := range s.Outputs {
		v, ok := out[f.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("output %q is declared but was not returned", f.Name))
		case !Fits(f.Type, v):
			errs = append(errs, fmt.Sprintf("output %q must be %s, got %s %s", f.Name, f.Type, TypeName(v), brief(v)))
		}
	}
	var extra []string
	for k := range out {
		if _, ok := s.Output(k); !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		errs = append(errs, fmt.Sprintf("output %q was returned but is not declared in the sidecar (declare it or drop it)", k))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func brief(v any) string {
	s := fmt.Sprintf("%#v", v)
	if str, ok := v.(string); ok {
		s = fmt.Sprintf("%q", str)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
