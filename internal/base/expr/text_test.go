package expr

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestTextRender(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"plain", "No open claim.", "No open claim."},
		{"variable", "Status: {{ world.a }}", "Status: b"},
		{"state scope", "{{ state.path }} — {{ state.description }}", "review.wait — Waiting."},
		{"every root", "{{ slots.text }} {{ args.claim }} {{ event.type }} {{ run.turn }} {{ menu.1 }} {{ item.label }}", "taxi lunch turn.start 3 two first"},
		// ?? is rewritten to |default:.
		{"?? missing", `{{ world.x ?? "none" }}`, "none"},
		{"?? present", `{{ world.a ?? "none" }}`, "b"},
		{"?? nested", `{{ world.verdict.decision ?? "(pending)" }} {{ world.missing.decision ?? "(pending)" }}`, "approve (pending)"},
		{"?? chained", `{{ world.x ?? world.y ?? "z" }}`, "z"},
		{"?? without spaces", `{{ world.x??"none" }}`, "none"},
		{"?? inside a string is text", `{{ world.x ?? "a ?? b" }}`, "a ?? b"},
		{"?? in single quotes is text", `{{ world.x ?? 'a ?? b' }}`, "a ?? b"},
		{"?? in a block tag", `{% if world.flag ?? world.t %}y{% else %}n{% endif %}`, "y"},
		{"?? follows default's falsy rule", `{{ world.zero ?? 5 }}`, "5"},
		{"?? in plain text is text", "what?? {{ world.a }}??", "what?? b??"},
		// cond ? a : b becomes an if tag; nested ternaries, ?? and
		// filter arguments inside it keep their meaning.
		{"ternary, true branch", `[{{ world.a != '' ? ': **' + world.a + '**' : '' }}]`, "[: **b**]"},
		{"ternary, false branch", `[{{ world.x != nil ? 'set' : 'unset' }}]`, "[unset]"},
		{"ternary, nested in the else branch", `{{ world.x ? 'x' : world.t ? 't' : 'none' }}`, "t"},
		{"ternary with ?? and a filter", `{{ world.t ? world.x ?? 'dflt' : world.a|upper }} {{ world.x ? 1 : world.a|upper }}`, "dflt B"},
		{"ternary: ? and : inside strings are text", `{{ world.t ? 'a ? b' : 'c : d' }}`, "a ? b"},
		// Missing values render empty.
		{"missing root", "[{{ nothing }}]", "[]"},
		{"missing key", "[{{ world.missing }}]", "[]"},
		{"field of missing", "[{{ world.missing.deeper.still }}]", "[]"},
		{"index past the end", "[{{ world.tags.5 }}]", "[]"},
		// Values print as in value templates.
		{"no autoescape", "{{ world.html }} {{ '<i>' }}", "<a&b> <i>"},
		{"map as JSON", "{{ world.m }}", `{"a":[1,"x"],"z":1}`},
		{"list as JSON", "{{ world.tags }}", `["red","green"]`},
		{"nested map as JSON", "{{ world.list.0 }}", `{"name":"x","tags":["p","q"]}`},
		{"floats", "{{ world.f }} {{ world.whole }} {{ world.verdict.confidence }}", "0.85 40 0.9"},
		{"bools", "{{ world.t }}", "true"},
		{"json.Number", "{{ world.num }}", "12.50"},
		{"arithmetic", "{{ world.n + 1 }} {{ world.n * 2 }}", "4 6"},
		{"comparison", "{{ world.n > 2 }}", "true"},
		{"pongo2 filters", `{{ world.a|upper }} {{ world.whole|floatformat:2 }} {{ world.tags|join:", " }} {{ world.tags|length }}`, "B 40.00 red, green 2"},
		{"filter then ??", `{{ world.x|upper ?? "none" }}`, "none"},
		// Tags.
		{"for", "{% for t in world.tags %}{{ forloop.Counter }}.{{ t }} {% endfor %}", "1.red 2.green "},
		{"for over maps", "{% for i in world.list %}{{ i.name }}{% if not forloop.Last %},{% endif %}{% endfor %}", "x,y"},
		{"for empty", "{% for t in world.nolist %}x{% empty %}none{% endfor %}", "none"},
		{"if else", "{% if world.n > 5 %}big{% elif world.n > 2 %}mid{% else %}small{% endif %}", "mid"},
		{"whitespace control", "a  {{- world.a -}}  c", "abc"},
		{"comment", "{# {{ nope ?? 1 }} #}x", "x"},
		{"verbatim", "{% verbatim %}{{ world.a ?? 1 }}{% endverbatim %}", "{{ world.a ?? 1 }}"},
		// Kitsoki's filters.
		{"col pads", "[{{ world.a|col:4 }}]", "[b   ]"},
		{"col cuts", "[{{ args.claim|col:3 }}]", "[lun]"},
		{"col formats numbers", "[{{ world.f|col:6 }}]", "[0.85  ]"},
		{"col wide characters", `[{{ "日本語"|col:5 }}]`, "[日本 ]"},
		{"rcol", "[{{ world.n|rcol:4 }}]", "[   3]"},
		{"rcol cuts", "[{{ args.claim|rcol:2 }}]", "[lu]"},
		{"col of missing", "[{{ world.missing|col:2 }}]", "[  ]"},
		{"reverse string", "{{ world.a|reverse }}{{ args.claim|reverse }}", "bhcnul"},
		{"reverse list", "{{ world.tags|reverse }}", `["green","red"]`},
		{"reverse in for", "{% for t in world.tags|reverse %}{{ t }} {% endfor %}", "green red "},
		{"wordwrap by columns", `{{ "aaa bbb ccc dddd"|wordwrap:7 }}`, "aaa bbb\nccc\ndddd"},
		{"wordwrap is not per word count", `{{ "a b c d"|wordwrap:3 }}`, "a b\nc d"},
		{"wordwrap keeps line breaks", "{{ args.text|wordwrap:9 }}", "one\ntwo three\nfour"},
		{"wordwrap long word", `{{ "abcdefgh ij"|wordwrap:4 }}`, "abcdefgh\nij"},
		{"reference numbers and attributes", `{{ args.text|reference:"notes.md" }}`,
			"<reference src=\"notes.md\" lines=\"1-2\" sha256=\"8dd0d534\">\n1 | one\n2 | two three four\n</reference>"},
		{"reference aligns numbers and keeps text as is", `{{ args.doc|reference:"f" }}`,
			"<reference src=\"f\" lines=\"1-10\" sha256=\"78e72ee8\">\n 1 | a\n 2 |\n 3 | b\n 4 | c\n 5 | d\n 6 | e\n 7 | f\n 8 | g\n 9 | h\n10 | {{ x }}\n</reference>"},
		{"reference of nothing is nothing", `[{{ world.missing|reference:"x" }}]`, "[]"},
	}
	env := testEnv()
	env["args"].(map[string]any)["text"] = "one\ntwo three four"
	env["args"].(map[string]any)["doc"] = "a\n\nb\nc\nd\ne\nf\ng\nh\n{{ x }}\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := CompileText(tt.src)
			if err != nil {
				t.Fatalf("CompileText(%q): %v", tt.src, err)
			}
			if tx.Source() != tt.src {
				t.Errorf("Source() = %q", tx.Source())
			}
			got, err := tx.Render(env)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render(%q) = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestTextCompileErrors(t *testing.T) {
	tests := []struct {
		src       string
		wantMsg   string
		line, col int
	}{
		{"{{ world.a + }}", "Expected either a number, string, keyword or identifier", 1, 13},
		{"abc\n{{ world.a|nope }}", "Filter 'nope' does not exist", 2, 12},
		{"x {{ world.x ?? }}", "", 1, 0},
		{`{% include "other.md" %}`, `the "include" tag is not available in story text templates`, 1, 4},
		{`{% extends "base.md" %}`, `the "extends" tag is not available`, 1, 4},
		{`{% ssi "/etc/passwd" %}`, `the "ssi" tag is not available`, 1, 4},
		{"{% if world.a %}x", "Unexpected EOF, expected tag elif or else or endif", 0, 0},
		{"{% for x in world.tags %}x", "Unexpected EOF", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := CompileText(tt.src)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v (%T), want *CompileError", err, err)
			}
			if !strings.Contains(ce.Msg, tt.wantMsg) {
				t.Errorf("Msg = %q, want it to contain %q", ce.Msg, tt.wantMsg)
			}
			if tt.line != 0 && ce.Line != tt.line {
				t.Errorf("Line = %d, want %d (%v)", ce.Line, tt.line, err)
			}
			if tt.col != 0 && ce.Col != tt.col {
				t.Errorf("Col = %d, want %d (%v)", ce.Col, tt.col, err)
			}
			if strings.Contains(ce.Msg, "kitsoki") {
				t.Errorf("Msg leaks the rewriting: %q", ce.Msg)
			}
		})
	}
}

func TestTextRenderErrors(t *testing.T) {
	tests := []struct {
		src     string
		wantErr string
		col     int
	}{
		{"{{ world.a.b.c }}", "can't access a field by name on type string", 4},
		{"ab {{ world.n + world.a.b }}", "can't access a field by name on type string", 0},
		{"{{ world.a|col }}", "col needs a positive width, e.g. col:20", 12},
		{"{{ world.a|rcol:0 }}", "rcol needs a positive width", 12},
		{"{{ world.a|wordwrap }}", "wordwrap needs a positive width", 12},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			tx, err := CompileText(tt.src)
			if err != nil {
				t.Fatalf("CompileText: %v", err)
			}
			out, err := tx.Render(env)
			if out != "" {
				t.Errorf("Render returned output alongside an error: %q", out)
			}
			checkErr(t, err, tt.wantErr)
			if strings.Contains(errText(err), "[Error") {
				t.Errorf("error keeps pongo2's prefix: %v", err)
			}
			if _, col := position(t, err); tt.col != 0 && col != tt.col {
				t.Errorf("col = %d, want %d (%v)", col, tt.col, err)
			}
		})
	}
}

func TestTextNilEnv(t *testing.T) {
	tx, err := CompileText("[{{ world.a }}]")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tx.Render(nil); err != nil || got != "[]" {
		t.Errorf("Render(nil) = %q, %v; want \"[]\"", got, err)
	}
}

// Compiling and rendering from many goroutines at once is safe (run with
// -race).
func TestTextConcurrent(t *testing.T) {
	shared, err := CompileText("{{ world.a }}{{ run.turn }}")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			i++ // not 0: ?? treats 0 as missing
			env := Env{"world": map[string]any{"a": i}, "run": map[string]any{"turn": i}}
			for range 50 {
				if got, err := shared.Render(env); err != nil || got != fmt.Sprintf("%d%d", i, i) {
					errs <- fmt.Errorf("Render = %q, %v", got, err)
					return
				}
				own, err := CompileText("{{ world.a ?? 'x' }}")
				if err != nil {
					errs <- err
					return
				}
				if got, err := own.Render(env); err != nil || got != fmt.Sprint(i) {
					errs <- fmt.Errorf("Render = %q, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The reference filter's line numbers are right-aligned to the last one's
// width.
func TestReferenceLineNumbers(t *testing.T) {
	tx, err := CompileText(`{{ args.doc|reference:"d" }}`)
	if err != nil {
		t.Fatal(err)
	}
	doc := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	got, err := tx.Render(Env{"args": map[string]any{"doc": doc}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if !strings.HasPrefix(lines[0], `<reference src="d" lines="1-10" sha256="`) || lines[1] != " 1 | a" || lines[10] != "10 | j" || lines[11] != "</reference>" {
		t.Errorf("got:\n%s", got)
	}
}
