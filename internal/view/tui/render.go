package tui

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// theme is the UI's styles, made once per model.
type theme struct {
	err, notice, hint, prompt, state, intent, heading, key, code, cursor, banner lipgloss.Style
}

func newTheme() theme { return themeFor("") }

// themeAccents are the accent colours of the room themes (theme:): the
// state line, intents, headings, the picker cursor and code borders take
// it. An unknown name draws as the default, as in Kitsoki.
var themeAccents = map[string]string{"meta-blue": "4", "meta-amber": "214", "off-path": "5"}

// themeFor is the UI's styles under a room theme.
func themeFor(name string) theme {
	th := theme{
		err:     lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		notice:  lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		hint:    lipgloss.NewStyle().Faint(true),
		prompt:  lipgloss.NewStyle().Bold(true),
		state:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
		intent:  lipgloss.NewStyle().Bold(true),
		heading: lipgloss.NewStyle().Bold(true).Underline(true),
		key:     lipgloss.NewStyle().Bold(true),
		code:    lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1),
		cursor:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
		banner:  lipgloss.NewStyle().Reverse(true),
	}
	if c, ok := themeAccents[name]; ok {
		accent := lipgloss.Color(c)
		th.state = th.state.Foreground(accent)
		th.cursor = th.cursor.Foreground(accent)
		th.intent = th.intent.Foreground(accent)
		th.heading = th.heading.Foreground(accent)
		th.code = th.code.BorderForeground(accent)
	}
	return th
}

// bannerColor is the ANSI color of a banner color a story may name.
func bannerColor(name string) (string, bool) {
	i := slices.Index([]string{"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"}, strings.ToLower(name))
	switch {
	case i >= 0:
		return fmt.Sprint(i), true
	case strings.EqualFold(name, "gray"), strings.EqualFold(name, "grey"):
		return "8", true
	}
	return "", false
}

// renderView renders the current state's view: each typed element in its
// own form, apart by a blank line.
func (m *Model) renderView() string {
	if m.status.ViewErr != nil {
		return m.th.err.Render("view: " + m.mask(m.status.ViewErr.Error()))
	}
	var parts []string
	for _, el := range m.status.View {
		if s := m.renderElement(el); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

func (m *Model) renderElement(el orchestrator.ViewElement) string {
	mask, w := m.mask, m.width
	switch el.Kind {
	case "heading":
		return m.th.heading.Render(mask(el.Body))
	case "banner":
		st := lipgloss.NewStyle().Border(lipgloss.ThickBorder()).Padding(0, 1).Bold(true)
		if c, ok := bannerColor(el.Color); ok {
			st = st.BorderForeground(lipgloss.Color(c)).Foreground(lipgloss.Color(c))
		}
		body := mask(el.Body)
		if el.Subtitle != "" {
			body += "\n" + lipgloss.NewStyle().Faint(true).Render(mask(el.Subtitle))
		}
		return st.Render(body)
	case "kv":
		kw := 0
		for _, p := range el.Pairs {
			kw = max(kw, lipgloss.Width(p.Key))
		}
		lines := make([]string, len(el.Pairs))
		for i, p := range el.Pairs {
			lines[i] = m.th.key.Render(fmt.Sprintf("%-*s", kw, mask(p.Key))) + "  " + mask(p.Value)
		}
		return strings.Join(lines, "\n")
	case "list":
		marker := orDefault(el.Marker, "•")
		lines := make([]string, len(el.Items))
		for i, it := range el.Items {
			lines[i] = marker + " " + mask(it.Label)
			if it.Hint != "" {
				lines[i] += m.th.hint.Render("  " + mask(it.Hint))
			}
		}
		return strings.Join(lines, "\n")
	case "code":
		return m.th.code.Render(mask(strings.TrimRight(el.Body, "\n")))
	case "prose":
		return lipgloss.NewStyle().Width(max(w-2, 20)).Render(mask(el.Body))
	case "media":
		line := fmt.Sprintf("[%s] %s (%s)", orDefault(el.Media.Kind, "media"),
			mask(orDefault(el.Media.Caption, el.Media.Handle)), mask(orDefault(el.Media.Path, el.Media.Handle)))
		if el.Media.AnnotateIntent != "" {
			line += m.th.hint.Render("  (:annotate <note> sends " + el.Media.AnnotateIntent + ")")
		}
		return line
	}
	// template, base, choice (its text form; the first choice is also a
	// picker in the live area)
	return mask(strings.TrimRight(el.Text, "\n"))
}

// picker is the first choice of the current view with something to pick,
// in its mode:
//   - single: Up/Down move, Enter on an empty line takes the item;
//   - multi: Up/Down move, Space on an empty line ticks or unticks the
//     item, Enter on an empty line sends the ticked values as the choice's
//     list slot (within its min and max);
//   - form: Enter on an empty line fills the input with the choice's
//     intent and its fields (defaults written in) for the user to finish.
type picker struct {
	mode     string
	prompt   string
	intent   string
	slot     string
	min, max int64
	items    []orchestrator.ViewItem
	fields   []orchestrator.ViewField
	ticked   map[int]bool
	cursor   int
}

// newPicker is the picker of the view's first choice that has items
// (single, multi) or fields (form), or nil.
func newPicker(view []orchestrator.ViewElement) *picker {
	for _, el := range view {
		if el.Kind != "choice" || el.Choice == nil {
			continue
		}
		c := el.Choice
		p := &picker{mode: c.Mode, prompt: c.Prompt, intent: c.Intent, slot: c.Slot, min: c.Min, max: c.Max,
			items: el.Items, fields: c.Fields, ticked: map[int]bool{}}
		switch {
		case (c.Mode == "single" || c.Mode == "multi") && len(el.Items) > 0:
			return p
		case c.Mode == "form" && c.Intent != "" && len(c.Fields) > 0:
			return p
		}
	}
	return nil
}

func (p *picker) move(down bool) {
	switch {
	case down && p.cursor < len(p.items)-1:
		p.cursor++
	case !down && p.cursor > 0:
		p.cursor--
	}
}

// toggle ticks or unticks the item under the cursor of a multi choice; it
// reports whether the picker took the key.
func (p *picker) toggle() bool {
	if p.mode != "multi" {
		return false
	}
	p.ticked[p.cursor] = !p.ticked[p.cursor]
	return true
}

// line is the typed line of what was picked; edit is true when the line
// still needs the user (a slot to type, a form to fill); err says why
// nothing can be sent yet (too few or too many items ticked).
func (p *picker) line() (line string, edit bool, err error) {
	switch p.mode {
	case "multi":
		var vals []any
		for i, it := range p.items {
			if p.ticked[i] {
				vals = append(vals, it.Value)
			}
		}
		n := int64(len(vals))
		switch {
		case n < p.min || (n == 0 && p.min == 0):
			return "", false, fmt.Errorf("tick at least %d item(s) with Space, then Enter", max(p.min, 1))
		case p.max > 0 && n > p.max:
			return "", false, fmt.Errorf("tick at most %d item(s) (%d ticked)", p.max, n)
		}
		return p.intent + " " + p.slot + "=" + quoteValue(vals), false, nil
	case "form":
		fields := []string{p.intent}
		for _, f := range p.fields {
			if f.Readonly {
				continue
			}
			v := ""
			if f.Default != "" {
				v = quoteValue(f.Default)
			}
			fields = append(fields, f.Name+"="+v)
		}
		return strings.Join(fields, " "), true, nil
	}
	it := p.items[p.cursor]
	fields := []string{it.Intent}
	for _, k := range slices.Sorted(maps.Keys(it.Slots)) {
		fields = append(fields, k+"="+quoteValue(it.Slots[k]))
	}
	if it.Param != nil {
		return strings.Join(append(fields, it.Param.Slot+"="), " "), true, nil
	}
	return strings.Join(fields, " "), false, nil
}

func (p *picker) view(mask func(string) string, th theme) string {
	var b strings.Builder
	if p.prompt != "" {
		b.WriteString(mask(p.prompt) + "\n")
	}
	if p.mode == "form" {
		for i, f := range p.fields {
			line := "  " + f.Name
			if f.Type != "" {
				line += th.hint.Render(" (" + f.Type + ")")
			}
			switch {
			case f.Readonly:
				line += " = " + mask(fmt.Sprint(f.Value))
			case f.Default != "":
				line += th.hint.Render(" default " + mask(f.Default))
			}
			if f.Hint != "" {
				line += th.hint.Render("  " + mask(f.Hint))
			}
			b.WriteString(line)
			if i < len(p.fields)-1 {
				b.WriteString("\n")
			}
		}
		b.WriteString("\n" + th.hint.Render("(Enter fills the line: "+p.intent+" field=…)"))
		return b.String()
	}
	for i, it := range p.items {
		mark := "  "
		label := mask(it.Label)
		if i == p.cursor {
			mark = th.cursor.Render("❯ ")
			label = th.cursor.Render(label)
		}
		if p.mode == "multi" {
			box := "[ ] "
			if p.ticked[i] {
				box = "[x] "
			}
			mark += box
		}
		suffix := it.Intent
		if p.mode == "multi" {
			suffix = it.Value
		}
		b.WriteString(mark + label + th.hint.Render(" ("+suffix+")"))
		if it.Hint != "" {
			b.WriteString(th.hint.Render("  " + mask(it.Hint)))
		}
		if i < len(p.items)-1 {
			b.WriteString("\n")
		}
	}
	if p.mode == "multi" {
		b.WriteString("\n" + th.hint.Render("(Space ticks, Enter sends "+p.intent+" "+p.slot+"=[…])"))
	}
	return b.String()
}

// quoteValue writes a slot value as the typed line reads it: bare when it
// has no space or quote, else in double quotes; lists and maps as JSON.
func quoteValue(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		s = string(b)
	default:
		s = fmt.Sprint(x)
	}
	if s == "" || strings.ContainsAny(s, " \t\"'") {
		if !strings.Contains(s, `"`) {
			return `"` + s + `"`
		}
		return `'` + s + `'`
	}
	return s
}
