package tui

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// WorldReader is a Driver that gives the session's world: `:world` then
// opens the world viewer instead of printing the world.
type WorldReader interface {
	// World is a copy of the world now.
	World() map[string]any
}

// WorldWriter is a Driver that can set a world key from the viewer; the
// note it returns is shown (when the value takes effect, say).
type WorldWriter interface {
	SetWorld(key string, value any) (note string, err error)
}

// worldView is the world viewer: the world as a tree whose maps and
// lists open and close, and whose long texts show in full when opened.
type worldView struct {
	world  map[string]any
	open   map[string]bool // the nodes opened, by path
	cursor int
	top    int // the first node drawn
}

// worldNode is one line of the tree.
type worldNode struct {
	path  []string
	depth int
	key   string
	value any
}

func (n worldNode) id() string { return strings.Join(n.path, "\x00") }

// children reports whether the node holds others (a map or a list that
// is not empty).
func (n worldNode) children() bool {
	switch v := n.value.(type) {
	case map[string]any:
		return len(v) > 0
	case []any:
		return len(v) > 0
	}
	return false
}

// nodes lists the tree's lines, opened nodes' children under them.
func (wv *worldView) nodes() []worldNode {
	var out []worldNode
	var walk func(path []string, depth int, v any)
	walk = func(path []string, depth int, v any) {
		add := func(key string, child any) {
			p := append(slices.Clone(path), key)
			n := worldNode{path: p, depth: depth, key: key, value: child}
			out = append(out, n)
			if wv.open[n.id()] && n.children() {
				walk(p, depth+1, child)
			}
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				add(k, x[k])
			}
		case []any:
			for i, e := range x {
				add(strconv.Itoa(i), e)
			}
		}
	}
	walk(nil, 0, wv.world)
	return out
}

// summary is a node's value on its line: a scalar as JSON, a map or a
// list by its size.
func summary(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return plural(len(x), "key")
	case []any:
		return plural(len(x), "item")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// worldKey handles a key while the viewer is open.
func (m *Model) worldKey(k tea.KeyMsg) tea.Cmd {
	wv := m.world
	nodes := wv.nodes()
	if len(nodes) == 0 {
		if k.Type == tea.KeyEsc || k.String() == "q" {
			m.world = nil
		}
		return nil
	}
	wv.cursor = min(wv.cursor, len(nodes)-1)
	n := nodes[wv.cursor]
	switch {
	case k.Type == tea.KeyEsc || k.String() == "q":
		m.world = nil
	case k.Type == tea.KeyUp || k.String() == "k":
		wv.cursor = max(wv.cursor-1, 0)
	case k.Type == tea.KeyDown || k.String() == "j":
		wv.cursor = min(wv.cursor+1, len(nodes)-1)
	case k.Type == tea.KeyEnter || k.Type == tea.KeySpace:
		wv.open[n.id()] = !wv.open[n.id()]
	case k.Type == tea.KeyRight || k.String() == "l":
		wv.open[n.id()] = true
	case k.Type == tea.KeyLeft || k.String() == "h":
		if wv.open[n.id()] {
			wv.open[n.id()] = false
			break
		}
		for i := wv.cursor - 1; i >= 0; i-- { // to the parent
			if nodes[i].depth < n.depth {
				wv.cursor = i
				break
			}
		}
	case k.String() == "e":
		return m.startEdit(n)
	}
	return nil
}

// lines draws the viewer in rows lines of width w: the tree, the selected
// value in full when it is a long text, and the keys.
func (wv *worldView) lines(w, rows int, mask func(string) string, th theme) []string {
	head := []string{th.heading.Render("World")}
	foot := []string{th.hint.Render(ansi.Truncate("Up/Down move · Enter opens and closes · ←/→ · e edits · Esc closes", w, ""))}
	nodes := wv.nodes()
	if len(nodes) == 0 {
		return append(append(head, "(the world is empty)"), foot...)
	}
	wv.cursor = min(wv.cursor, len(nodes)-1)
	var detail []string
	if s, ok := nodes[wv.cursor].value.(string); ok && wv.open[nodes[wv.cursor].id()] {
		detail = wrap(mask(s), max(w-4, 10))
		for i := range detail {
			detail[i] = "    " + detail[i]
		}
	}
	room := max(rows-len(head)-len(foot)-len(detail), 1)
	if wv.cursor < wv.top {
		wv.top = wv.cursor
	}
	if wv.cursor >= wv.top+room {
		wv.top = wv.cursor - room + 1
	}
	kw := map[int]int{} // the key column's width at each depth
	for _, n := range nodes {
		kw[n.depth] = min(max(kw[n.depth], ansi.StringWidth(n.key)), 24)
	}
	out := head
	for i := wv.top; i < len(nodes) && i < wv.top+room; i++ {
		n := nodes[i]
		mark := "  "
		switch {
		case n.children() && wv.open[n.id()]:
			mark = "▾ "
		case n.children():
			mark = "▸ "
		}
		pointer := "  "
		if i == wv.cursor {
			pointer = th.cursor.Render("❯ ")
		}
		key := n.key + strings.Repeat(" ", max(kw[n.depth]-ansi.StringWidth(n.key), 0))
		line := pointer + strings.Repeat("  ", n.depth) + mark + th.key.Render(key) + "  " + mask(summary(n.value))
		out = append(out, ansi.Truncate(line, w, "…"))
		if i == wv.cursor {
			out = append(out, detail...)
		}
	}
	return append(out, foot...)
}

// worldEdit is an edit of a world value in the input line.
type worldEdit struct {
	path  []string
	saved string // the input line before the edit, put back after it
}

func (e *worldEdit) label() string {
	return "edit world." + strings.Join(e.path, ".") + " (JSON, or plain text for a string; Enter sets it, Esc leaves it)"
}

// startEdit puts a node's value in the input line for editing.
func (m *Model) startEdit(n worldNode) tea.Cmd {
	if _, ok := m.cfg.Driver.(WorldWriter); !ok {
		m.hint = "this run cannot edit the world"
		return nil
	}
	m.editing = &worldEdit{path: n.path, saved: m.input.Value()}
	text := summary(n.value)
	switch v := n.value.(type) {
	case string:
		text = v
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		text = string(b)
	}
	m.input.SetValue(text)
	m.input.CursorEnd()
	return nil
}

// finishEdit sets the edited value: the line as JSON, else as a string.
func (m *Model) finishEdit(line string) tea.Cmd {
	e := m.editing
	m.editing = nil
	m.input.SetValue(e.saved)
	m.input.CursorEnd()
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		v = line
	}
	v = normalizeJSON(v)
	top := e.path[0]
	value := v
	if len(e.path) > 1 {
		var ok bool
		value, ok = setPath(deepCopy(m.world.world[top]), e.path[1:], v)
		if !ok {
			m.hint = "cannot set world." + strings.Join(e.path, ".") + ": its parent changed"
			return nil
		}
	}
	note, err := m.cfg.Driver.(WorldWriter).SetWorld(top, value)
	if err != nil {
		m.hint = err.Error()
		return nil
	}
	if rd, ok := m.cfg.Driver.(WorldReader); ok {
		m.world.world = rd.World()
	}
	m.hint = note
	return m.println(m.th.notice.Render("world." + strings.Join(e.path, ".") + " = " + m.mask(summary(v))))
}

// normalizeJSON turns whole JSON numbers into int64, as the world holds
// them.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeJSON(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeJSON(e)
		}
	}
	return v
}

func deepCopy(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return normalizeJSON(out)
}

// setPath sets path inside v (maps by key, lists by index).
func setPath(v any, path []string, to any) (any, bool) {
	if len(path) == 0 {
		return to, true
	}
	switch x := v.(type) {
	case map[string]any:
		c, ok := setPath(x[path[0]], path[1:], to)
		if !ok {
			return v, false
		}
		x[path[0]] = c
		return x, true
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(x) {
			return v, false
		}
		c, ok := setPath(x[i], path[1:], to)
		if !ok {
			return v, false
		}
		x[i] = c
		return x, true
	}
	return v, false
}
