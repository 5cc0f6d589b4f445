package tui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// menu is the Esc menu: what the UI can do, picked with Up/Down and Enter
// or an item's key; Esc closes it.
type menu struct {
	items  []menuItem
	cursor int
}

type menuItem struct {
	key   string // the key that picks it
	label string
	do    func(m *Model) tea.Cmd
}

// newMenu lists what can be done now: while a turn runs, cancelling it
// comes first.
func (m *Model) newMenu() *menu {
	var items []menuItem
	if m.busy {
		items = append(items, menuItem{"c", "Cancel the running call", func(m *Model) tea.Cmd {
			if m.cancel != nil {
				m.cancel()
			}
			return nil
		}})
	}
	items = append(items,
		menuItem{"i", "Intents of this state", func(m *Model) tea.Cmd { return m.submit(":intents") }},
		menuItem{"w", "World: view and edit", func(m *Model) tea.Cmd { return m.submit(":world") }},
	)
	if m.has(":reload") {
		items = append(items, menuItem{"r", "Reload the story from disk (:reload)", func(m *Model) tea.Cmd { return m.submit(":reload") }})
	}
	items = append(items,
		menuItem{"h", "Help: commands and keys", func(m *Model) tea.Cmd { return m.submit(":help") }},
		menuItem{"q", "Quit (the session is kept; run again to resume it)", func(m *Model) tea.Cmd { return m.submit(":quit") }},
		menuItem{"esc", "Back", func(*Model) tea.Cmd { return nil }},
	)
	return &menu{items: items}
}

// key handles a key while the menu is open; the menu closes when an item
// is picked.
func (m *Model) menuKey(k tea.KeyMsg) tea.Cmd {
	mu := m.menu
	pick := -1
	switch k.Type {
	case tea.KeyEsc:
		m.menu = nil
		return nil
	case tea.KeyUp, tea.KeyCtrlP:
		mu.cursor = (mu.cursor + len(mu.items) - 1) % len(mu.items)
	case tea.KeyDown, tea.KeyCtrlN, tea.KeyTab:
		mu.cursor = (mu.cursor + 1) % len(mu.items)
	case tea.KeyEnter:
		pick = mu.cursor
	case tea.KeyRunes:
		for i, it := range mu.items {
			if it.key == strings.ToLower(string(k.Runes)) {
				pick = i
			}
		}
	}
	if pick < 0 {
		return nil
	}
	m.menu = nil
	if m.busy && mu.items[pick].key != "c" && mu.items[pick].key != "esc" && mu.items[pick].key != "q" {
		m.hint = "a turn is running: wait for it, or cancel it first (Esc, then c)"
		return nil
	}
	return mu.items[pick].do(m)
}

// lines draws the menu in rows lines of width w.
func (mu *menu) lines(w, rows int, th theme) []string {
	out := []string{th.heading.Render("Menu"), ""}
	for i, it := range mu.items {
		mark := "  "
		label := it.label
		if i == mu.cursor {
			mark = th.cursor.Render("❯ ")
			label = th.cursor.Render(label)
		}
		out = append(out, wrap(mark+th.key.Render(padKey(it.key))+"  "+label, w)...)
	}
	out = append(out, "", th.hint.Render(ansi.Truncate("Up/Down and Enter, or the item's key; Esc closes the menu", w, "")))
	if len(out) > rows {
		out = out[:rows]
	}
	return out
}

func padKey(k string) string {
	if len(k) < 3 {
		return k + strings.Repeat(" ", 3-len(k))
	}
	return k
}
