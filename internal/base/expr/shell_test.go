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
