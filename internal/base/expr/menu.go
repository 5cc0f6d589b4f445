package expr

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/flosch/pongo2/v6"
)

// The menu helpers read the computed menu of the state being rendered (the
// menu root, built with Menu). In expressions a call available(x) is
// compiled as available(menu, x); in text templates the helpers take the
// menu from the render's scope.
var menuFuncs = []string{"available", "blocked", "blocked_reason", "intent_status"}

// MenuEntry is one intent of a computed menu. Primary is true when the
// intent can be taken now (an arm of it would be chosen), false when every
// arm's guard fails; Reason is then the failing arm's guard_hint.
// DestinationHint is the state the chosen arm leads to (primary entries
// only). Hidden intents are left out of the primary and blocked lists but
// the helpers still answer for them.
type MenuEntry struct {
	Intent, Display, Reason, DestinationHint string
	Primary, Hidden                          bool
}

// Menu builds the value of the menu root: "primary" and "blocked" lists of
// entries (maps with intent, display, reason, destination_hint, primary),
// in the order given, and "intents", every entry by intent name.
func Menu(entries []MenuEntry) map[string]any {
	primary, blocked := []any{}, []any{}
	byName := make(map[string]any, len(entries))
	for _, e := range entries {
		m := map[string]any{"intent": e.Intent, "display": e.Display, "reason": e.Reason,
			"destination_hint": e.DestinationHint, "primary": e.Primary}
		byName[e.Intent] = m
		switch {
		case e.Hidden:
		case e.Primary:
			primary = append(primary, m)
		default:
			blocked = append(blocked, m)
		}
	}
	return map[string]any{"primary": primary, "blocked": blocked, "intents": byName}
}

// menuEntry returns the entry of intent name in menu, nil when the menu has
// none (the intent is not bound in the state, or there is no menu).
func menuEntry(menu any, name string) map[string]any {
	m, _ := menu.(map[string]any)
	byName, _ := m["intents"].(map[string]any)
	e, _ := byName[name].(map[string]any)
	return e
}

func menuStatus(menu any, name string) string {
	e := menuEntry(menu, name)
	switch {
	case e == nil:
		return "unknown"
	case e["primary"] == true:
		return "available"
	}
	return "blocked"
}

func menuReason(menu any, name string) string {
	if menuStatus(menu, name) != "blocked" {
		return ""
	}
	r, _ := menuEntry(menu, name)["reason"].(string)
	return r
}

// menuCall evaluates helper fn for the intent name against menu.
func menuCall(fn string, menu any, name string) any {
	switch fn {
	case "available":
		return menuStatus(menu, name) == "available"
	case "blocked":
		return menuStatus(menu, name) == "blocked"
	case "blocked_reason":
		return menuReason(menu, name)
	}
	return menuStatus(menu, name)
}

// menuFuncSig is the compiled signature of each helper: the menu, then the
// intent name.
func menuFuncSig(fn string) any {
	switch fn {
	case "available", "blocked":
		return new(func(any, string) bool)
	}
	return new(func(any, string) string)
}

// menuFuncImpl is helper fn as an expr-lang function.
func menuFuncImpl(fn string) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		name, ok := args[1].(string)
		if !ok {
			return nil, fmt.Errorf("%s: the intent name must be a string, got %s", fn, describe(args[1]))
		}
		return menuCall(fn, args[0], name), nil
	}
}

// passMenu rewrites each call of a menu helper to take the menu root as its
// first argument. The validator has checked that each has one argument.
func passMenu(calls []*ast.CallNode) {
	for _, c := range calls {
		m := &ast.IdentifierNode{Value: "menu"}
		m.SetLocation(c.Location())
		c.Arguments = append([]ast.Node{m}, c.Arguments...)
	}
}

// pongo2 helpers: the first parameter is the execution context, whose
// public scope is the render's Env.
func textAvailable(ctx *pongo2.ExecutionContext, name string) bool {
	return menuStatus(ctx.Public["menu"], name) == "available"
}

func textBlocked(ctx *pongo2.ExecutionContext, name string) bool {
	return menuStatus(ctx.Public["menu"], name) == "blocked"
}

func textBlockedReason(ctx *pongo2.ExecutionContext, name string) string {
	return menuReason(ctx.Public["menu"], name)
}

func textIntentStatus(ctx *pongo2.ExecutionContext, name string) string {
	return menuStatus(ctx.Public["menu"], name)
}

// menuWord finds a use of the menu inside a text template's tag: the menu
// root or a helper name.
var menuWord = regexp.MustCompile(`(^|[^\w.])(menu\b|(available|blocked|blocked_reason|intent_status)\s*\()`)

func tagUsesMenu(body string) bool {
	return (strings.Contains(body, "menu") || strings.Contains(body, "(")) && menuWord.MatchString(body)
}

// isMenuFunc reports whether name is one of the menu helpers.
func isMenuFunc(name string) bool { return slices.Contains(menuFuncs, name) }

// UsesMenu reports whether the guard reads the computed menu (the menu root
// or a helper such as available).
func (g *Guard) UsesMenu() bool { return g.u.menu }

// UsesMenu reports whether the template reads the computed menu.
func (v *Value) UsesMenu() bool { return v.menu }

// UsesMenu reports whether some string of the tree reads the computed menu.
func (t *Tree) UsesMenu() bool { return t.menu }

// UsesMenu reports whether a tag of the template reads the computed menu
// (the menu root or one of the helpers).
func (t *Text) UsesMenu() bool { return t.menu }
