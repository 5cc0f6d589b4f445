package schema

import (
	"strings"
	"testing"
	"testing/fstest"
)

// compileText compiles one schema document from memory.
func compileText(t testing.TB, doc string) (*Schema, error) {
	t.Helper()
	c := NewCompilerFS(fstest.MapFS{"s.json": {Data: []byte(doc)}}, "/story")
	return c.Compile("s.json")
}

// agree checks the fast path against the library on one value: valid by
// the fast path implies valid by the library, and for a schema the fast
// path compiled, valid by the library implies valid by the fast path.
func agree(t *testing.T, s *Schema, value string) (fast, lib bool) {
	t.Helper()
	v, err := Decode([]byte(value))
	if err != nil {
		t.Fatalf("value %s: %v", value, err)
	}
	lib = s.sch.Validate(v) == nil
	fast = s.fast != nil && s.fast.valid(v)
	return fast, lib
}

func TestFastValidatorAgreesWithTheLibrary(t *testing.T) {
	tests := []struct {
		schema    string
		supported bool
		values    []string
	}{
		{`true`, true, []string{`1`, `null`, `{"a":[1]}`}},
		{`false`, true, []string{`1`, `null`}},
		{`{}`, true, []string{`1`, `"x"`, `[]`, `{}`}},
		{`{"type":"string"}`, true, []string{`"x"`, `""`, `1`, `null`, `[]`}},
		{`{"type":"integer"}`, true, []string{`1`, `1.0`, `1.5`, `-3`, `1e3`, `1e300`, `9007199254740993`, `"1"`, `true`}},
		{`{"type":"number"}`, true, []string{`1`, `0.5`, `-1e-9`, `"0"`, `null`}},
		{`{"type":["string","null"]}`, true, []string{`"x"`, `null`, `0`}},
		{`{"type":["integer","boolean"]}`, true, []string{`2`, `2.5`, `false`, `"2"`}},
		{`{"type":"boolean"}`, true, []string{`true`, `false`, `0`}},
		{`{"type":"null"}`, true, []string{`null`, `0`, `""`}},
		{`{"type":"array"}`, true, []string{`[]`, `[1,"a"]`, `{}`}},
		{`{"type":"object"}`, true, []string{`{}`, `{"a":1}`, `[]`}},
		{`{"minLength":2,"maxLength":3}`, true, []string{`"ab"`, `"abc"`, `"a"`, `"abcd"`, `"éé"`, `"日本語"`, `"日本語x"`, `5`}},
		{`{"minimum":0,"maximum":1}`, true, []string{`0`, `1`, `0.5`, `-0.0`, `-1e-300`, `1.0000000000000002`, `2`, `"5"`}},
		{`{"exclusiveMinimum":0,"exclusiveMaximum":1}`, true, []string{`0`, `1`, `0.5`, `5e-324`, `0.9999999999999999`}},
		{`{"minimum":0.1}`, true, []string{`0.1`, `0.09999999999999999`, `0.10000000000000002`, `1`}},
		{`{"maximum":9007199254740992}`, true, []string{`9007199254740992`, `9007199254740993`, `9007199254740991`, `1e16`}},
		{`{"minimum":-5,"type":"integer"}`, true, []string{`-5`, `-6`, `-5.0`, `-4.5`}},
		// A bound whose float is not its exact value, or whose float's
		// shortest text is not it: the library's.
		{`{"maximum":0.1000000000000000055511151231257827021181583404541015625}`, true, []string{`0.1`, `0.2`, `0.09999999999999999`}},
		{`{"minimum":0.1000000000000000055511151231257827021181583404541015625}`, true, []string{`0.1`, `0.2`, `0.09999999999999999`}},
		{`{"maximum":1e400,"minimum":-1e400}`, true, []string{`1`, `1e308`, `-1e308`, `9223372036854775807`, `-9223372036854775808`}},
		{`{"minimum":1e-400}`, true, []string{`0`, `-0`, `5e-324`, `1`}},
		{`{"minimum":9223372036854775806.5,"maximum":9223372036854775807}`, true, []string{`9223372036854775806`, `9223372036854775807`, `9223372036854775808`, `9.2233720368547758e18`}},
		{`{"minimum":-9007199254740993.5}`, true, []string{`-9007199254740993`, `-9007199254740994`, `-9007199254740992`, `-9007199254740994.0`}},
		{`{"exclusiveMaximum":2.5}`, true, []string{`2`, `3`, `2.5`, `2.4999999999999996`}},
		{`{"enum":[9007199254740993, 0.3]}`, true, []string{`9007199254740993`, `9007199254740992`, `9007199254740992.0`, `0.3`, `0.30000000000000004`}},
		{`{"enum":["a","b",null,true,1.5,2]}`, true, []string{`"a"`, `"b"`, `"c"`, `null`, `true`, `false`, `1.5`, `2`, `2.0`, `3`, `[]`, `{}`}},
		{`{"enum":[[1],{"a":1}]}`, false, []string{`[1]`, `{"a":1}`, `1`}},
		{`{"const":"x"}`, true, []string{`"x"`, `"y"`, `1`}},
		{`{"const":0}`, true, []string{`0`, `-0`, `0.0`, `1`, `false`}},
		{`{"const":null}`, true, []string{`null`, `0`, `"null"`}},
		{`{"const":{"a":1}}`, false, []string{`{"a":1}`}},
		{`{"type":"object","required":["a","b"]}`, true, []string{`{"a":1,"b":2}`, `{"a":1}`, `{}`, `[]`}},
		{`{"required":["a"]}`, true, []string{`{"a":1}`, `{}`, `"no object"`}},
		{`{"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, true, []string{`{"a":"x","b":1}`, `{"a":1}`, `{"c":null}`, `{}`, `5`}},
		{`{"properties":{"a":{}},"additionalProperties":false}`, true, []string{`{"a":1}`, `{"a":1,"b":2}`, `{}`}},
		{`{"properties":{"a":{}},"additionalProperties":{"type":"integer"}}`, true, []string{`{"a":"x","b":2}`, `{"b":"x"}`, `{"a":"x"}`}},
		{`{"minProperties":1,"maxProperties":2}`, true, []string{`{}`, `{"a":1}`, `{"a":1,"b":2,"c":3}`}},
		{`{"items":{"type":"string"},"minItems":1,"maxItems":2}`, true, []string{`["a"]`, `[]`, `["a","b","c"]`, `[1]`, `"a"`}},
		{`{"type":"array","items":{"type":"object","properties":{"n":{"type":"number","minimum":1}},"required":["n"]}}`, true, []string{`[{"n":1},{"n":2.5}]`, `[{"n":0}]`, `[{}]`}},
		{`{"title":"t","description":"d","default":1,"examples":[1],"$comment":"c","deprecated":true,"readOnly":true}`, true, []string{`1`, `"x"`}},
		{`{"$defs":{"x":{"type":"string"}},"type":"integer"}`, true, []string{`1`, `"a"`}},
		// Keywords the fast path leaves to the library.
		{`{"$defs":{"x":{"type":"string"}},"$ref":"#/$defs/x"}`, false, []string{`"a"`, `1`}},
		{`{"pattern":"^a"}`, false, []string{`"ab"`, `"b"`}},
		{`{"anyOf":[{"type":"string"},{"type":"null"}]}`, false, []string{`"a"`, `null`, `1`}},
		{`{"oneOf":[{"minimum":1},{"maximum":5}]}`, false, []string{`3`, `0`}},
		{`{"not":{"type":"string"}}`, false, []string{`1`, `"a"`}},
		{`{"if":{"type":"string"},"then":{"minLength":2}}`, false, []string{`"a"`, `"ab"`}},
		{`{"multipleOf":2}`, false, []string{`4`, `3`}},
		{`{"uniqueItems":true}`, false, []string{`[1,2]`, `[1,1]`}},
		{`{"contains":{"type":"string"}}`, false, []string{`["a"]`, `[1]`}},
		{`{"prefixItems":[{"type":"string"}]}`, false, []string{`["a"]`, `[1]`}},
		{`{"patternProperties":{"^x":{"type":"string"}}}`, false, []string{`{"xa":"a"}`, `{"xa":1}`}},
		{`{"propertyNames":{"maxLength":2}}`, false, []string{`{"ab":1}`, `{"abc":1}`}},
		{`{"dependentRequired":{"a":["b"]}}`, false, []string{`{"a":1,"b":1}`, `{"a":1}`}},
		{`{"unevaluatedProperties":false,"properties":{"a":{}}}`, false, []string{`{"a":1}`, `{"b":1}`}},
		{`{"properties":{"a":{"pattern":"x"}}}`, false, []string{`{"a":"x"}`}},
		{`{"items":{"$ref":"#"}}`, false, []string{`[[]]`}},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","format":"email"}`, false, []string{`"a@b.c"`, `"nope"`}},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, false, []string{`["a"]`, `[1]`}},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"integer","maximum":3}}}`, true, []string{`{"a":3}`, `{"a":4}`}},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","maximum":3,"exclusiveMaximum":true}`, true, []string{`2`, `3`, `4`}},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			s, err := compileText(t, tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.fast != nil; got != tt.supported {
				t.Fatalf("fast path compiled = %v, want %v", got, tt.supported)
			}
			for _, val := range tt.values {
				fast, lib := agree(t, s, val)
				if fast && !lib {
					t.Errorf("%s: the fast path says valid, the library invalid", val)
				}
				if tt.supported && lib && !fast {
					t.Errorf("%s: the library says valid, the fast path does not", val)
				}
			}
		})
	}
}

// TestFastValidatorAllocatesNothing: a valid submission is judged without
// an allocation (the library allocates dozens per value).
func TestFastValidatorAllocatesNothing(t *testing.T) {
	s, err := compileText(t, `{"type":"object","additionalProperties":false,"required":["decision","confidence","tags"],
		"properties":{"decision":{"enum":["approve","reject"]},"confidence":{"type":"number","minimum":0,"maximum":1},
		"tags":{"type":"array","items":{"type":"string","maxLength":20}},"priority":{"type":"integer","minimum":1,"maximum":5}}}`)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Decode([]byte(`{"decision":"approve","confidence":0.92,"tags":["travel","taxi"],"priority":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.fast == nil {
		t.Fatal("the fast path did not compile the schema")
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := s.Validate(v); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Validate of a valid value allocated %v times, want 0", n)
	}
}

// TestInvalidValuesKeepTheLibrarysMessages: an invalid value gets the
// library's violations, whichever path first looked at it.
func TestInvalidValuesKeepTheLibrarysMessages(t *testing.T) {
	s, err := compileText(t, `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"integer","maximum":3}}}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ value, want string }{
		{`{"a":4}`, "/a: maximum: got 4, want 3"},
		{`{"a":"x"}`, "/a: type: got string, want integer"},
		{`{}`, "/: required: missing property 'a'"},
		{`{"a":1,"b":2}`, "/: additionalProperties: additional properties 'b' not allowed"},
	}
	for _, tt := range tests {
		_, err := s.ValidateJSON([]byte(tt.value))
		if err == nil {
			t.Errorf("%s: valid, want %q", tt.value, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %q, want it to contain %q", tt.value, err, tt.want)
		}
	}
}

// FuzzFastValidator compares the fast path with the library on any
// schema the library compiles and any value: valid by the fast path
// implies valid by the library, and for a schema the fast path compiled,
// the other way round too.
func FuzzFastValidator(f *testing.F) {
	seeds := [][2]string{
		{`{"type":"object","required":["a"],"properties":{"a":{"type":"integer","minimum":1,"maximum":5}},"additionalProperties":false}`, `{"a":3}`},
		{`{"enum":["x",1,null,true]}`, `1.0`},
		{`{"type":"array","items":{"type":"string","minLength":1},"maxItems":3}`, `["a","é"]`},
		{`{"exclusiveMinimum":0.5,"maximum":10}`, `0.5000000000000001`},
		{`{"const":-0}`, `0`},
		{`{"maximum":0.1,"minimum":-9223372036854775808.5}`, `0.1`},
		{`{"type":["integer","null"]}`, `1e2`},
		{`{"minProperties":1,"additionalProperties":{"type":"boolean"}}`, `{"x":true}`},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, schemaDoc, value string) {
		s, err := compileText(t, schemaDoc)
		if err != nil {
			return
		}
		v, err := Decode([]byte(value))
		if err != nil {
			return
		}
		lib := s.sch.Validate(v) == nil
		fast := s.fast != nil && s.fast.valid(v)
		if fast && !lib {
			t.Fatalf("schema %s, value %s: the fast path says valid, the library invalid", schemaDoc, value)
		}
		if s.fast != nil && lib && !fast {
			t.Fatalf("schema %s, value %s: the library says valid, the fast path does not", schemaDoc, value)
		}
	})
}

// FuzzFastNumbers aims at the delicate part, numbers: any two JSON
// numbers as a bound (every bound keyword, and enum and const) and a value,
// compared by the fast path exactly as the library compares them.
func FuzzFastNumbers(f *testing.F) {
	for _, s := range [][2]string{
		{`0.1`, `0.1`}, {`0.1000000000000000055511151231257827021181583404541015625`, `0.1`},
		{`9223372036854775806.5`, `9223372036854775807`}, {`-9007199254740993.5`, `-9007199254740993`},
		{`1e400`, `1e308`}, {`1e-400`, `0`}, {`-0`, `0.0`}, {`2`, `2.0`}, {`1.5e3`, `1500`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, bound, value string) {
		v, err := Decode([]byte(value))
		if err != nil {
			return
		}
		if _, err := Decode([]byte(bound)); err != nil || !isValidJSONNumber(bound) {
			return
		}
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "const"} {
			doc := `{"type":"number","` + kw + `":` + bound + `}`
			checkFastAgrees(t, doc, value, v)
		}
		checkFastAgrees(t, `{"type":"integer","enum":["x",`+bound+`]}`, value, v)
	})
}

func checkFastAgrees(t *testing.T, doc, value string, v any) {
	t.Helper()
	s, err := compileText(t, doc)
	if err != nil {
		return
	}
	if s.fast == nil {
		t.Fatalf("schema %s: the fast path did not compile it", doc)
	}
	lib := s.sch.Validate(v) == nil
	if fast := s.fast.valid(v); fast != lib {
		t.Fatalf("schema %s, value %s: fast path %v, library %v", doc, value, fast, lib)
	}
}

// isValidJSONNumber reports whether s is one JSON number and nothing else.
func isValidJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789+-.eE", c) {
			return false
		}
	}
	return true
}
