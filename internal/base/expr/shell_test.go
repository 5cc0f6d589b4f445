package expr

import (
	"os/exec"
	"strings"
	"testing"
)

// hostile values: every one must come out of bash as the same bytes.
var shellValues = []string{
	"hello; touch pwned",
	`it's "q" $(touch pwned) ` + "`touch pwned`" + ` \ $HOME !x`,
	"'", `"`, `\`, "$", "`", "", "a\nb", ")", "$(", "'\"'\"",
}

// Each {{ }} of a shell command is quoted for where it lands: bash,
// running the rendered command, prints every value exactly.
func TestEvalShellQuotesForTheContext(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	trim := func(v string) string { return strings.TrimRight(v, "\n") } // $( ) drops trailing newlines
	same := func(v string) string { return v }
	tmpls := []struct {
		name, src string
		want      func(string) string // what printf's %s receives
	}{
		{"bare", `printf '[%s]' {{ slots.v }}`, same},
		{"glued to a word", `printf '[%s]' --x={{ slots.v }}`, func(v string) string { return "--x=" + v }},
		{"double quotes", `printf '[%s]' "{{ slots.v }}"`, same},
		{"double quotes with text", `printf '[%s]' "a {{ slots.v }} b"`, func(v string) string { return "a " + v + " b" }},
		{"single quotes", `printf '[%s]' '{{ slots.v }}'`, same},
		{"command substitution", `printf '[%s]' "$(printf %s {{ slots.v }})"`, trim},
		{"substitution with parens", `printf '[%s]' "$( (printf %s "{{ slots.v }}") )"`, trim},
		{"backticks", "printf '[%s]' \"`printf %s {{ slots.v }}`\"", trim},
		{"after an escaped quote", `printf '%s' \'; printf '[%s]' {{ slots.v }}`, func(v string) string { return v }},
		{"in an if", `printf '[%s]' {{ if slots.v == "never" }}x{{ else }}"{{ slots.v }}"{{ end }}`, same},
		// issue 28 audit: a here-document's body is not a bare word (a
		// single-quoted value ran its $( ) there), nor is a comment.
		{"here-document", "x=$(cat <<EOF\n{{ slots.v }}\nEOF\n)\nprintf '[%s]' \"$x\"", trim},
		{"here-document with text", "x=$(cat <<EOF\na {{ slots.v }} b\nEOF\n)\nprintf '[%s]' \"$x\"", func(v string) string { return "a " + v + " b" }},
		{"here-document, tabs stripped", "x=$(cat <<-EOF\n\t{{ slots.v }}\n\tEOF\n)\nprintf '[%s]' \"$x\"", trim},
		{"quoted here-document", "x=$(cat <<'EOF'\n{{ slots.v }}\nEOF\n)\nprintf '[%s]' \"$x\"", trim},
		{"substitution in a here-document", "x=$(cat <<EOF\n[$(printf %s {{ slots.v }})]\nEOF\n)\nprintf '[%s]' \"$x\"", func(v string) string { return "[" + trim(v) + "]" }},
		{"two here-documents", "x=$(cat <<A <<B\nignored {{ slots.v }}\nA\n{{ slots.v }}\nB\n)\nprintf '[%s]' \"$x\"", trim},
		{"after a here-document", "cat <<EOF >/dev/null\n{{ slots.v }}\nEOF\nprintf '[%s]' {{ slots.v }}", same},
		{"a shift is no here-document", "(( 1<<2 )); printf '[%s]' $(( 1 << 2 )){{ slots.v }}", func(v string) string { return "4" + v }},
		{"a comment", "printf '[%s]' {{ slots.v }} # {{ slots.v }}\nprintf ''", same},
		{"a # inside a word", "printf '[%s]' a#{{ slots.v }}", func(v string) string { return "a#" + v }},
	}
	for _, tt := range tmpls {
		v, err := CompileValue(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, val := range shellValues {
			cmdline, err := v.EvalShell(Env{"slots": map[string]any{"v": val}})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			out, err := exec.Command("bash", "-c", cmdline).Output()
			if err != nil {
				t.Errorf("%s, %q: bash -c %q: %v", tt.name, val, cmdline, err)
				continue
			}
			want := "[" + tt.want(val) + "]"
			if tt.name == "after an escaped quote" {
				want = "'" + want
			}
			if string(out) != want {
				t.Errorf("%s, %q: bash -c %q printed %q, want %q", tt.name, val, cmdline, out, want)
			}
		}
	}
}

func TestEvalShellLiteralAndWhole(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"echo hi; ls", "echo hi; ls"},                  // a literal is the command
		{"{{ world.cmd }}", "make test && echo 'done'"}, // one {{ }}: the whole line, from data
		{"echo {{ world.n }}", "echo '3'"},
		{"echo {{ world.list }}", `echo '["a","b"]'`},
		{"echo {{ world.missing }}", "echo ''"},
	} {
		v, err := CompileValue(c.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.EvalShell(Env{"world": map[string]any{"cmd": "make test && echo 'done'", "n": 3, "list": []any{"a", "b"}}})
		if err != nil || got != c.want {
			t.Errorf("EvalShell(%q) = %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}

// A value holding a line that is a here-document's delimiter would end
// the here-document and run what follows it: it is refused.
func TestEvalShellValueEndingAHereDocument(t *testing.T) {
	for _, src := range []string{
		"cat <<EOF\n{{ slots.v }}\nEOF",
		"cat <<'EOF'\n{{ slots.v }}\nEOF",
		"cat <<-EOF\n\t{{ slots.v }}\n\tEOF",
		"cat <<EOF\nEO{{ slots.w }}\nEOF",
	} {
		v, err := CompileValue(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.EvalShell(Env{"slots": map[string]any{"v": "x\nEOF\ntouch pwned", "w": "F\ntouch pwned"}})
		if err == nil || !strings.Contains(err.Error(), `here-document <<EOF holds the line "EOF", which would end it`) {
			t.Errorf("EvalShell(%q): %v, want the here-document refused", src, err)
		}
	}
	v, err := CompileValue("cat <<EOF\n{{ slots.v }}\nEOF")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.EvalShell(Env{"slots": map[string]any{"v": "EOF2\n EOF"}}); err != nil || got != "cat <<EOF\nEOF2\n EOF\nEOF" {
		t.Errorf("a value with lines like the delimiter: %q, %v", got, err)
	}
}
