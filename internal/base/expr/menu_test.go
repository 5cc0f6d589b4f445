package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testMenu() map[string]any {
	return Menu([]MenuEntry{
		{Intent: "look", Display: "Look around", Primary: true, DestinationHint: "hall"},
		{Intent: "drive", Display: "drive", Reason: "Pick a ticket first."},
		{Intent: "secret", Display: "secret", Primary: true, Hidden: true},
	})
}

func TestMenuValue(t *testing.T) {
	m := testMenu()
	want := map[string]any{
		"primary": []any{map[string]any{"intent": "look", "display": "Look around", "reason": "", "destination_hint": "hall", "primary": true}},
		"blocked": []any{map[string]any{"intent": "drive", "display": "drive", "reason": "Pick a ticket first.", "destination_hint": "", "primary": false}},
	}
	got := map[string]any{"primary": m["primary"], "blocked": m["blocked"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("menu lists (-want +got):\n%s", diff)
	}
	if names := m["intents"].(map[string]any); len(names) != 3 || names["secret"] == nil {
		t.Errorf("menu.intents = %v, want all three intents, the hidden one too", names)
	}
}

// The helpers in guards and value templates (a view element's when: is one).
func TestMenuHelpersInExpressions(t *testing.T) {
	tests := []struct {
		src  string
		want any
	}{
		{"{{ available('look') }}", true},
		{"{{ available('drive') }}", false},
		{"{{ available('secret') }}", true},
		{"{{ available('nope') }}", false},
		{"{{ blocked('drive') }}", true},
		{"{{ blocked('look') }}", false},
		{"{{ blocked('nope') }}", false},
		{"{{ blocked_reason('drive') }}", "Pick a ticket first."},
		{"{{ blocked_reason('look') }}", ""},
		{"{{ blocked_reason('nope') }}", ""},
		{"{{ intent_status('look') }}", "available"},
		{"{{ intent_status('drive') }}", "blocked"},
		{"{{ intent_status('nope') }}", "unknown"},
		{"{{ !available('drive') && len(menu.primary) == 1 }}", true},
		{"{{ menu.blocked[0].display }}", "drive"},
		{"{{ range menu.primary }}[{{ .intent }}→{{ .destination_hint }}]{{ end }}", "[look→hall]"},
		{"{{ available(world.which) }}", true},
	}
	env := Env{"menu": testMenu(), "world": map[string]any{"which": "look"}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			v, err := CompileValue(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !v.UsesMenu() {
				t.Error("UsesMenu() = false, want true")
			}
			got, err := v.Eval(env)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// Without a menu in the scope every intent is unknown.
func TestMenuHelpersWithoutMenu(t *testing.T) {
	g, err := CompileGuard("available('look') || blocked('look') || intent_status('look') != 'unknown'")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := g.Eval(Env{}); err != nil || ok {
		t.Errorf("Eval = %v, %v; want false, nil", ok, err)
	}
}

func TestMenuHelperErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"available()", `col 1: available takes one argument, the intent name, as in available("start"); got 0`},
		{"blocked_reason('a', 'b') == ''", `col 1: blocked_reason takes one argument, the intent name, as in blocked_reason("start"); got 2`},
		{"availble('a')", `unknown function "availble"`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := CompileGuard(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	g, err := CompileGuard("available(world.n)")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Eval(Env{"world": map[string]any{"n": 3}})
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "available: the intent name must be a string, got an int") {
		t.Errorf("err = %v, want the string-name EvalError", err)
	}
}

func TestMenuHelpersInText(t *testing.T) {
	tests := []struct{ src, want string }{
		{"{% if available('look') %}- look{% endif %}", "- look"},
		{"{% if not available('drive') %}✗ drive — {{ blocked_reason('drive') }}{% endif %}", "✗ drive — Pick a ticket first."},
		{"{{ intent_status('drive') }}/{{ intent_status('nope') }}/{{ blocked('drive') }}", "blocked/unknown/true"},
		{"{% for e in menu.primary %}{{ e.display }};{% endfor %}{% for e in menu.blocked %}✗ {{ e.display }}: {{ e.reason }}{% endfor %}", "Look around;✗ drive: Pick a ticket first."},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			x, err := CompileText(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !x.UsesMenu() {
				t.Error("UsesMenu() = false, want true")
			}
			got, err := x.Render(Env{"menu": testMenu()})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUsesMenu(t *testing.T) {
	texts := []struct {
		src  string
		want bool
	}{
		{"Pick from the menu below, if available (or blocked).", false},
		{"{{ world.menu_choice }} {{ world.menu }}", false},
		{"{{ menu.primary }}", true},
		{"{% if intent_status('x') == 'blocked' %}x{% endif %}", true},
	}
	for _, tt := range texts {
		x, err := CompileText(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		if x.UsesMenu() != tt.want {
			t.Errorf("CompileText(%q).UsesMenu() = %v, want %v", tt.src, x.UsesMenu(), tt.want)
		}
	}
	for src, want := range map[string]bool{"world.menu == 1": false, "available('a')": true, "len(menu) > 0": true} {
		g, err := CompileGuard(src)
		if err != nil {
			t.Fatal(err)
		}
		if g.UsesMenu() != want {
			t.Errorf("CompileGuard(%q).UsesMenu() = %v, want %v", src, g.UsesMenu(), want)
		}
	}
	tr, err := CompileTree(map[string]any{"a": []any{"x", "{{ blocked('a') }}"}})
	if err != nil || !tr.UsesMenu() {
		t.Errorf("CompileTree: UsesMenu() = %v, err %v; want true", tr != nil && tr.UsesMenu(), err)
	}
}

// {% for %} over a string iterates nothing; lists, maps and the reversed
// and sorted options work as before.
func TestForOverString(t *testing.T) {
	env := Env{"world": map[string]any{"s": "TKT-1: a bug", "l": []any{map[string]any{"id": "a", "status": "open"}, map[string]any{"id": "b"}}}}
	tests := []struct{ src, want string }{
		{`{% for t in world.s|default:"" %}{% if t.status %}{{ t.id }}{% endif %}{% endfor %}`, ""},
		{`{% for t in world.s %}x{% empty %}none{% endfor %}`, "none"},
		{`{% for t in world.l|default:"" %}{% if t.status %}{{ t.id }}{% endif %}{% endfor %}`, "a"},
		{`{% for t in world.l reversed %}{{ t.id }}{% endfor %}`, "ba"},
		{`{%- for t in world.l -%}{{ t.id }}{%- endfor %}`, "ab"},
		{`{% for k, v in world.l.0 sorted %}{{ k }}={{ v }};{% endfor %}`, "id=a;status=open;"},
	}
	for _, tt := range tests {
		x, err := CompileText(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		got, err := x.Render(env)
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.src, got, err, tt.want)
		}
	}
}
