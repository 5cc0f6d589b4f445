package localllm

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// progress reports one download. On a terminal it redraws a bar in place;
// anywhere else (a log file, CI) it prints a line at each 10% step and at
// least every lineEvery when the size is unknown, so a multi-GB fetch is
// never silent and never floods a log.
type progress struct {
	w       io.Writer
	clk     clock.Clock
	tty     bool
	name    string
	total   int64 // -1 when unknown
	done    int64
	last    time.Time
	lastPct int
}

const (
	barEvery  = 100 * time.Millisecond
	lineEvery = 10 * time.Second
	barWidth  = 30
)

// isTerminal reports whether w is a terminal the bar can redraw on.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(w io.Writer, clk clock.Clock, name string, start, total int64) *progress {
	return &progress{w: w, clk: clk, tty: isTerminal(w), name: name, done: start, total: total, last: clk.Now(), lastPct: pct(start, total)}
}

func pct(done, total int64) int {
	if total <= 0 {
		return -1
	}
	return int(done * 100 / total)
}

// Write counts bytes passing through an io.TeeReader.
func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	now := p.clk.Now()
	switch {
	case p.tty:
		if now.Sub(p.last) >= barEvery {
			p.last = now
			p.bar()
		}
	case p.total > 0:
		if cur := pct(p.done, p.total); cur/10 > p.lastPct/10 && cur < 100 {
			p.lastPct = cur
			p.last = now
			fmt.Fprintf(p.w, "  %s: %d%% (%s of %s)\n", p.name, cur, size(p.done), size(p.total))
		}
	default:
		if now.Sub(p.last) >= lineEvery {
			p.last = now
			fmt.Fprintf(p.w, "  %s: %s\n", p.name, size(p.done))
		}
	}
	return len(b), nil
}

func (p *progress) bar() {
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r  %s", size(p.done))
		return
	}
	n := int(p.done * barWidth / p.total)
	fmt.Fprintf(p.w, "\r  [%s%s] %3d%% %s / %s", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), pct(p.done, p.total), size(p.done), size(p.total))
}

// finish ends the progress display.
func (p *progress) finish() {
	if p.tty {
		p.bar()
		fmt.Fprintln(p.w)
	}
}

// size renders a byte count for people.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}
