package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValueEval(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want any
	}{
		// One {{ }} spanning the whole string keeps the type.
		{"typed int", "{{ world.n }}", 3},
		{"typed without spaces", "{{world.n}}", 3},
		{"typed float", "{{ world.f }}", 0.85},
		{"typed bool", "{{ world.t }}", true},
		{"typed map", "{{ world.verdict }}", map[string]any{"decision": "approve", "confidence": 0.9}},
		{"typed list", "{{ world.tags }}", []any{"red", "green"}},
		{"typed nil", "{{ world.missing }}", nil},
		{"typed slot", "{{ slots.amount }}", 40},
		{"typed arithmetic", "{{ world.n * 2 }}", 6},
		{"typed ??", "{{ slots.approver ?? 'human' }}", "human"},
		{"typed ?.", "{{ world.missing?.decision }}", nil},
		{"typed ?. with ??", "{{ world.missing?.decision ?? '(pending)' }}", "(pending)"},
		{"typed string with braces inside", "{{ '}}' + world.a }}", "}}b"},
		// Anything else is a string.
		{"mixed", "n={{ world.n }}", "n=3"},
		{"leading space", " {{ world.n }}", " 3"},
		{"trailing newline", "{{ world.n }}\n", "3\n"},
		{"two expressions", "{{ world.n }}{{ world.n }}", "33"},
		{"nil is empty", "[{{ world.missing }}]", "[]"},
		{"map is sorted compact JSON", "m={{ world.m }}", `m={"a":[1,"x"],"z":1}`},
		{"list is JSON", "{{ world.list }}!", `[{"name":"x","tags":["p","q"]},{"name":"y","tags":[]}]!`},
		{"map with non-string keys", "{{ world.ymap }}.", `{"1":"one","k":{"true":"yes"}}.`},
		{"typed []string is JSON", "{{ world.strs }}.", `["s1","s2"].`},
		{"no HTML escaping", "{{ world.html }}!", "<a&b>!"},
		{"floats and bools use %v", "{{ world.f }} {{ world.whole }} {{ world.big }} {{ world.t }}", "0.85 40 1e+21 true"},
		{"json.Number", "{{ world.num }} EUR", "12.50 EUR"},
		// Literals.
		{"literal", "plain text", "plain text"},
		{"bare expression is literal", "world.a", "world.a"},
		{"closing braces alone are literal", "a }} b", "a }} b"},
		{"empty", "", ""},
		// if / else if / else.
		{"if true", "{{ if world.n > 2 }}big{{ else }}small{{ end }}", "big"},
		{"if false", "{{ if world.n > 5 }}big{{ else }}small{{ end }}", "small"},
		{"if without else", "[{{ if world.missing }}x{{ end }}]", "[]"},
		{"else if", "{{ if world.n == 1 }}one{{ else if world.n == 3 }}three{{ else }}other{{ end }}", "three"},
		{"else if falls to else", "{{ if world.n == 1 }}one{{ else if world.n == 2 }}two{{ else }}other{{ end }}", "other"},
		{"truthy string", "{{ if world.a }}y{{ else }}n{{ end }}", "y"},
		{"falsy empty string", "{{ if world.empty }}y{{ else }}n{{ end }}", "n"},
		{"falsy zero", "{{ if world.zero }}y{{ else }}n{{ end }}", "n"},
		{"falsy empty list", "{{ if world.nolist }}y{{ else }}n{{ end }}", "n"},
		{"truthy map", "{{ if world.m }}y{{ else }}n{{ end }}", "y"},
		{"multiline block", "{{ if world.t }}\nyes\n{{ end }}", "\nyes\n"},
		// range.
		{"range field", "{{ range world.list }}[{{ .name }}]{{ end }}", "[x][y]"},
		{"range dot", "{{ range world.tags }}{{ . }},{{ end }}", "red,green,"},
		{"range dot as map", "{{ range world.list }}{{ . }};{{ end }}", `{"name":"x","tags":["p","q"]};{"name":"y","tags":[]};`},
		{"range expression on item", "{{ range world.list }}{{ upper(.name) + '!' }}{{ end }}", "X!Y!"},
		{"range sees roots", "{{ range world.tags }}{{ world.a }}{{ . }} {{ end }}", "bred bgreen "},
		{"range with if", "{{ range world.list }}{{ if .name == 'x' }}X{{ else }}-{{ end }}{{ end }}", "X-"},
		{"range over map values in key order", "{{ range world.scores }}{{ . }}{{ end }}", "12"},
		{"range over []string", "{{ range world.strs }}{{ . }}{{ end }}", "s1s2"},
		{"range over nil", "[{{ range world.missing }}x{{ end }}]", "[]"},
		{"range else on empty", "{{ range world.nolist }}x{{ else }}none{{ end }}", "none"},
		{"range else not taken", "{{ range world.tags }}x{{ else }}none{{ end }}", "xx"},
		{"nested range", "{{ range world.list }}{{ .name }}:{{ range .tags }}{{ . }}{{ end }};{{ end }}", "x:pq;y:;"},
		{"range function of item", "{{ range world.list }}{{ len(.tags) }}{{ end }}", "20"},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := CompileValue(tt.src)
			if err != nil {
				t.Fatalf("CompileValue(%q): %v", tt.src, err)
			}
			if v.Source() != tt.src {
				t.Errorf("Source() = %q", v.Source())
			}
			if v.IsLiteral() != !strings.Contains(tt.src, "{{") {
				t.Errorf("IsLiteral() = %v", v.IsLiteral())
			}
			got, err := v.Eval(env)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Eval(%q) mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}

func TestValueCompileErrors(t *testing.T) {
	tests := []struct {
		src       string
		wantMsg   string
		line, col int
	}{
		{"{{ world.a", "{{ is not closed: add }}", 1, 1},
		{"ab {{ 'x }}", "unterminated string inside {{ … }}", 1, 7},
		{"x {{ }}", "empty {{ }}", 1, 3},
		{"{{ foo }}", `unknown name "foo"`, 1, 4},
		{"ab {{ foo }}", `unknown name "foo"`, 1, 7},
		{"line one\n  {{ world.a == }}", "unexpected token EOF", 2, 15},
		{"{{ if world.a }}x", "{{ if }} is never closed: add {{ end }}", 1, 1},
		{"{{ range world.tags }}x", "{{ range }} is never closed: add {{ end }}", 1, 1},
		{"x{{ end }}", "unexpected {{ end }} with no open {{ if }} or {{ range }}", 1, 2},
		{"{{ else }}", "unexpected {{ else }}", 1, 1},
		{"{{ if world.a }}{{ else }}{{ else }}{{ end }}", "{{ else }} after {{ else }}: expected {{ end }}", 1, 27},
		{"{{ range world.tags }}{{ else if world.a }}{{ end }}", "unexpected {{ else if }} in {{ range }}", 1, 23},
		{"{{ else world.a }}", "expected {{ else }} or {{ else if condition }}", 1, 1},
		{"{{ if }}x{{ end }}", "{{ if }} needs an expression", 1, 1},
		{"{{ range }}x{{ end }}", "{{ range }} needs an expression", 1, 1},
		{"{{ .name }}", `"." refers to the current item and is only valid inside {{ range }}`, 1, 4},
		{"{{ range world.list }}{{ foo }}{{ end }}", `unknown name "foo"`, 1, 26},
		{"{{ range world.list }}{{ .a + foo }}{{ end }}", `unknown name "foo"`, 1, 31},
		{"{{ __kitsoki_dot__ }}", "reserved name", 1, 4},
		{"{{ date(world.a) }}", `function "date" is not allowed`, 1, 4},
		{"{{ range world.list }}{{ any(.tags, .x) }}{{ end }}", `function "any" and closures`, 1, 26},
		{"{{ .tags }}", `"." refers to the current item`, 1, 4},
		{"{{ {'a': 1} }}", "map literals are not allowed", 1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := CompileValue(tt.src)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v (%T), want *CompileError", err, err)
			}
			if !strings.Contains(ce.Msg, tt.wantMsg) {
				t.Errorf("Msg = %q, want it to contain %q", ce.Msg, tt.wantMsg)
			}
			if ce.Line != tt.line || ce.Col != tt.col {
				t.Errorf("position = line %d col %d, want line %d col %d", ce.Line, ce.Col, tt.line, tt.col)
			}
		})
	}
}

func TestValueEvalErrors(t *testing.T) {
	tests := []struct {
		src     string
		wantErr string
		col     int
	}{
		{"{{ world.x.y }}", "cannot fetch y from <nil>", 12},
		{"a {{ world.x.y }}", "cannot fetch y from <nil>", 14},
		{"{{ if world.x.y }}a{{ end }}", "cannot fetch y from <nil>", 15},
		{"{{ range world.a }}x{{ end }}", "{{ range }} needs a list or a map, got a string", 10},
		{"{{ range world.list }}{{ .name.first }}{{ end }}", "invalid operation", 32},
		{"{{ range world.list }}{{ .tags[0] }}{{ end }}", "index out of range: 0 (array length is 0)", 0},
		{"{{ world.x < 1 }}", "invalid operation: <nil> < int", 0},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			v, err := CompileValue(tt.src)
			if err != nil {
				t.Fatalf("CompileValue: %v", err)
			}
			_, err = v.Eval(env)
			if err == nil {
				t.Fatalf("Eval succeeded, want an error")
			}
			checkErr(t, err, tt.wantErr)
			if _, col := position(t, err); tt.col != 0 && col != tt.col {
				t.Errorf("col = %d, want %d (%v)", col, tt.col, err)
			}
		})
	}
}
