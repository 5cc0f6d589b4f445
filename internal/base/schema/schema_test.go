package schema

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func newCompiler(t *testing.T) *Compiler {
	t.Helper()
	c, err := NewCompiler("testdata/story")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCompileRefusesRefsLeavingTheStory(t *testing.T) {
	c := newCompiler(t)
	tests := []struct {
		file string
		want string
	}{
		{"schemas/escape.json", `schema "schemas/escape.json": $ref "../../outside/x.json" in schemas/escape.json leaves the story directory: references must stay inside the story directory`},
		{"schemas/url.json", `schema "schemas/url.json": $ref "https://example.com/x.json" in schemas/url.json is a URL: references must stay inside the story directory`},
		{"schemas/abs.json", `schema "schemas/abs.json": $ref "/etc/x.json" in schemas/abs.json is an absolute path: references must stay inside the story directory`},
		{"schemas/indirect.json", `$ref "../../outside/x.json" in schemas/nested.json leaves the story directory`},
		{"schemas/symlink.json", `schema "schemas/symlink.json": `},
		{"../outside/x.json", `schema "../outside/x.json": path leaves the story directory`},
		{"schemas/missing.json", `schema "schemas/missing.json": no such file or directory`},
		{"schemas/broken.json", `schema "schemas/broken.json": not valid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := c.Compile(tt.file)
			if err == nil {
				t.Fatalf("Compile(%q) succeeded, want error containing %q", tt.file, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile(%q) error:\n  %s\nwant it to contain:\n  %s", tt.file, err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	c := newCompiler(t)
	s, err := c.Compile("schemas/verdict.json")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Compile("schemas/verdict.json"); again != s {
		t.Error("second Compile of the same path did not hit the cache")
	}
	tests := []struct {
		name string
		in   string
		want any    // decoded value on success
		err  string // error text on failure
	}{
		{"valid", `{"decision":"approve","reason":"ok","confidence":0.5}`,
			map[string]any{"decision": "approve", "reason": "ok", "confidence": 0.5}, ""},
		{"integers stay integers", `{"decision":"reject","reason":"x","confidence":1}`,
			map[string]any{"decision": "reject", "reason": "x", "confidence": int64(1)}, ""},
		{"not json", `{"decision":`, nil, "submission is not valid JSON: unexpected EOF"},
		{"trailing data", `{} {}`, nil, "submission is not valid JSON: unexpected data after the JSON value"},
		{"several violations", `{"decision":"maybe","reason":"","confidence":2,"extra":1}`, nil,
			"/: additionalProperties: additional properties 'extra' not allowed; " +
				"/confidence: maximum: got 2, want 1; " +
				"/decision: enum: value must be one of 'approve', 'reject', 'unsure'; " +
				"/reason: minLength: got 0, want 1"},
		{"missing required", `{"decision":"approve"}`, nil, "/: required: missing properties 'reason', 'confidence'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ValidateJSON([]byte(tt.in))
			if tt.err != "" {
				var ie *InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("error = %v, want *InvalidError", err)
				}
				if err.Error() != tt.err {
					t.Errorf("error:\n  %s\nwant:\n  %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded value (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompileSharesOneCompiler covers what sharing one jsonschema compiler
// across a story's schemas must not change: a file first loaded as the
// target of a $ref compiles on its own too, a failing schema fails the same
// way every time, and concurrent compiles of one path agree on the result.
func TestCompileSharesOneCompiler(t *testing.T) {
	c := newCompiler(t)
	if _, err := c.Compile("schemas/verdict.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("schemas/common.json"); err != nil {
		t.Errorf("common.json, already loaded through verdict.json's $ref: %v", err)
	}
	_, first := c.Compile("schemas/indirect.json")
	_, again := c.Compile("schemas/indirect.json")
	if first == nil || again == nil || first.Error() != again.Error() {
		t.Errorf("indirect.json compiled twice: errors %v and %v, want the same error", first, again)
	}

	c = newCompiler(t)
	const n = 8
	got := make([]*Schema, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Half start from the $ref target, half from the schema using it.
			if i%2 == 0 {
				_, errs[i] = c.Compile("schemas/common.json")
			}
			if errs[i] == nil {
				got[i], errs[i] = c.Compile("schemas/verdict.json")
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("compile %d: %v", i, errs[i])
		}
		if got[i] != got[0] {
			t.Errorf("compile %d returned a different *Schema than compile 0", i)
		}
	}
}

// TestDecodeNumberTypes: integral numbers become int64 when they fit,
// every other number float64, so the world sees the same types whichever
// transport answered.
func TestDecodeNumberTypes(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`2`, int64(2)},
		{`-7`, int64(-7)},
		{`0.92`, 0.92},
		{`7.5`, 7.5},
		{`2.0`, 2.0},
		{`1e3`, 1000.0},
		{`1E-2`, 0.01},
		{`9223372036854775807`, int64(9223372036854775807)},
		{`9223372036854775808`, 9223372036854775808.0},
		{`{"a":[1,1.5]}`, map[string]any{"a": []any{int64(1), 1.5}}},
	}
	for _, tc := range tests {
		got, err := Decode([]byte(tc.in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Decode(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestCheck: Check is ValidateJSON without the value, the same function
// on every call, and handing it out allocates nothing.
func TestCheck(t *testing.T) {
	s, err := CompileDocument("v.json", []byte(`{"type": "object", "required": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"a": 1}`, `{}`, `[`} {
		_, want := s.ValidateJSON([]byte(in))
		got := s.Check()([]byte(in))
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("Check(%s) = %v, want %v", in, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Check() }); n != 0 {
		t.Errorf("Check allocates %v times, want 0", n)
	}
	var zero Schema // not built by a compiler: still usable
	if zero.Check() == nil {
		t.Error("the zero Schema has no Check")
	}
}

// compileText compiles one schema document from memory.
func compileText(t testing.TB, doc string) *Schema {
	t.Helper()
	s, err := NewCompilerFS(fstest.MapFS{"s.json": {Data: []byte(doc)}}, "/story").Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestValidateNumbersAsDecoded: the values Decode makes of a submission's
// numbers (int64, float64, the text of one beyond float64) are judged as
// the JSON numbers they were: exactly, whatever their Go type.
func TestValidateNumbersAsDecoded(t *testing.T) {
	tests := []struct {
		schema string
		value  string
		valid  bool
	}{
		{`{"type":"integer"}`, `1`, true},
		{`{"type":"integer"}`, `1.0`, true},
		{`{"type":"integer"}`, `1.5`, false},
		{`{"type":"integer"}`, `1e3`, true},
		{`{"type":"number"}`, `1e400`, false}, // beyond float64: Decode keeps its text
		{`{"maximum":9007199254740992}`, `9007199254740992`, true},
		{`{"maximum":9007199254740992}`, `9007199254740993`, false}, // an int64 is compared exactly
		{`{"minimum":0.1}`, `0.1`, true},
		{`{"minimum":0.1}`, `0.09999999999999999`, false},
		{`{"exclusiveMaximum":2.5}`, `2.5`, false},
		{`{"exclusiveMaximum":2.5}`, `2.4999999999999996`, true},
		{`{"enum":["a",2]}`, `2.0`, true},
		{`{"const":0}`, `-0`, true},
		{`{"maxLength":3}`, `"日本語"`, true}, // lengths count characters
		{`{"maxLength":3}`, `"日本語x"`, false},
	}
	for _, tt := range tests {
		s := compileText(t, tt.schema)
		_, err := s.ValidateJSON([]byte(tt.value))
		if got := err == nil; got != tt.valid {
			t.Errorf("schema %s, value %s: valid = %v (%v), want %v", tt.schema, tt.value, got, err, tt.valid)
		}
	}
}

// TestInvalidValuesGetTheLibrarysMessages: each violation names the
// instance location and the constraint, in the schema library's words.
func TestInvalidValuesGetTheLibrarysMessages(t *testing.T) {
	s := compileText(t, `{"type":"object","additionalProperties":false,"required":["a"],
		"properties":{"a":{"type":"integer","maximum":3},"l":{"type":"array","items":{"type":"string"}}}}`)
	tests := []struct{ value, want string }{
		{`{"a":4}`, "/a: maximum: got 4, want 3"},
		{`{"a":"x"}`, "/a: type: got string, want integer"},
		{`{}`, "/: required: missing property 'a'"},
		{`{"a":1,"b":2}`, "/: additionalProperties: additional properties 'b' not allowed"},
		{`{"a":1,"l":["x",2]}`, "/l/1: type: got number, want string"},
	}
	for _, tt := range tests {
		_, err := s.ValidateJSON([]byte(tt.value))
		var ie *InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("%s: error %v, want an *InvalidError", tt.value, err)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%s: %q, want %q", tt.value, err, tt.want)
		}
	}
}
