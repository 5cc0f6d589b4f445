package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The screen, top to bottom (the UI runs on the terminal's alternate
// screen, so every frame is drawn whole at the terminal's size):
//
//   - the banner: the story, the state and the keys to remember;
//   - the transcript, or the panel that covers it (the Esc menu, the
//     world viewer), scrolled to its end unless PgUp moved it;
//   - the live area: the state and its intents, the picker, the spinner
//     or an agent's question, the input line with its ghost suggestion,
//     and the hint line.
//
// Every line is wrapped to the terminal's width before it is drawn, so
// the terminal never wraps one itself, and a resize draws everything
// again at the new width with nothing of the old frame left over.

// minRows is the least the transcript (or a panel) keeps of the screen.
const minRows = 3

// wrap cuts text into lines of at most width cells, breaking at spaces
// where it can and inside words where it must; escape sequences are
// kept and not counted.
func wrap(text string, width int) []string {
	if width < 1 {
		width = 1
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " ")
		if ansi.StringWidth(line) <= width {
			out = append(out, line)
			continue
		}
		for _, l := range strings.Split(ansi.Wrap(line, width, ""), "\n") {
			// ansi.Wrap keeps a word longer than the width whole when it
			// cannot break it; cut it then.
			for ansi.StringWidth(l) > width {
				out = append(out, ansi.Truncate(l, width, ""))
				l = ansi.TruncateLeft(l, width, "")
			}
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}

// View draws the frame.
func (m *Model) View() string {
	if m.quitting {
		return ""
	}
	w, h := m.width, m.height
	top := m.bannerLines(w)
	bottom := m.liveLines(w, max(h-len(top)-minRows-1, 1))
	bottom = append([]string{m.th.hint.Render(strings.Repeat("─", w))}, bottom...)
	rows := max(h-len(top)-len(bottom), 0)
	var middle []string
	switch {
	case m.menu != nil: // panels start under the banner
		middle = fit(m.menu.lines(w, rows, m.th), rows, false)
	case m.world != nil:
		middle = fit(m.world.lines(w, rows, m.mask, m.th), rows, false)
	default: // the transcript ends over the live area
		middle = fit(m.log.window(w, rows, &m.scroll), rows, true)
	}
	all := append(append(top, middle...), bottom...)
	if h > 0 && len(all) > h {
		all = all[len(all)-h:]
	}
	return strings.Join(all, "\n")
}

// fit makes lines exactly rows long: padded with empty lines above
// (bottom: the lines end at the last row) or below, cut from the top
// (bottom) or the end.
func fit(lines []string, rows int, bottom bool) []string {
	switch {
	case len(lines) > rows && bottom:
		return lines[len(lines)-rows:]
	case len(lines) > rows:
		return lines[:rows]
	}
	pad := make([]string, rows-len(lines))
	if bottom {
		return append(pad, lines...)
	}
	return append(lines, pad...)
}

// bannerKeys are the banner's key reminders, longest first: it shows the
// longest that fits.
var bannerKeys = []string{
	"Esc menu · Tab completes · :help · Ctrl-D quits ",
	"Esc menu · :help · Ctrl-D quits ",
	"Esc menu ",
}

// bannerLines: the story's title and state on the left, the keys on the
// right, in reverse video across the screen.
func (m *Model) bannerLines(w int) []string {
	title := m.cfg.Title
	if title == "" {
		title = "kitsoki"
	}
	left := " " + m.mask(title)
	if m.status.State != "" {
		left += " · " + m.status.State
	}
	var lines []string
	for _, right := range bannerKeys {
		if m.scroll > 0 {
			right = "PgDn scrolls down · " + right
		}
		if gap := w - ansi.StringWidth(left) - ansi.StringWidth(right); gap >= 1 {
			lines = []string{left + strings.Repeat(" ", gap) + right}
			break
		}
	}
	if lines == nil {
		lines = wrap(left+" · "+bannerKeys[len(bannerKeys)-1], w)
	}
	for i, l := range lines {
		lines[i] = m.th.banner.Render(l + strings.Repeat(" ", max(w-ansi.StringWidth(l), 0)))
	}
	return lines
}

// liveLines is the live area at width w, at most limit lines: the parts
// that must show (input, spinner, question, hint) first, then as much of
// the state and its intents and of the picker as fits.
func (m *Model) liveLines(w, limit int) []string {
	var must []string
	switch {
	case m.question != nil:
		must = append(must, wrap(m.th.notice.Render("[agent asks] ")+m.mask(m.question.text), w)...)
	case m.busy:
		must = append(must, wrap(m.spinnerLine(), w)...)
	}
	if m.editing != nil {
		must = append(must, wrap(m.th.notice.Render(m.editing.label()), w)...)
	}
	must = append(must, m.input.View())
	if f := m.footer(); f != "" {
		must = append(must, wrap(f, w)...)
	}
	if m.hint != "" {
		must = append(must, wrap(m.th.hint.Render(m.mask(m.hint)), w)...)
	}
	room := limit - len(must)
	var extra []string
	if m.status.State != "" && m.menu == nil && m.world == nil {
		extra = append(extra, wrap(m.describe(), w)...)
	}
	if m.picker != nil && m.menu == nil && m.world == nil {
		extra = append(extra, wrap(m.picker.view(m.mask, m.th), w)...)
	}
	if len(extra) > room {
		cut := max(room-1, 0)
		more := len(extra) - cut
		extra = extra[:cut]
		if room > 0 {
			extra = append(extra, m.th.hint.Render(ansi.Truncate("… "+plural(more, "more line")+" (:intents prints them)", w, "")))
		}
	}
	return append(extra, must...)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
