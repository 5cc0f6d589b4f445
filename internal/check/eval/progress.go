package eval

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Progress is told about a live run as it goes. Implementations must be
// safe for concurrent use: calls finish on several goroutines.
type Progress interface {
	// Start announces how many calls the run makes.
	Start(total int)
	// Done reports one finished call.
	Done(c CallReport)
	// Finish ends the display.
	Finish()
}

// CallReport describes one finished call, for progress displays.
type CallReport struct {
	Candidate string // profile/model [effort=e]
	Example   string
	Repeat    int // 1-based
	Pass      bool
	Reason    string // why it did not pass
}

// NewProgress returns a progress display writing to w: a bar redrawn in
// place when terminal is true, else one plain line per call.
func NewProgress(w io.Writer, terminal bool) Progress {
	if terminal {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w}
}

// lineProgress prints "[n/total] candidate example #r: pass|fail (reason)".
type lineProgress struct {
	w     io.Writer
	mu    sync.Mutex
	n     int
	total int
}

func (p *lineProgress) Start(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
	fmt.Fprintf(p.w, "eval: %d calls\n", total)
}

func (p *lineProgress) Done(c CallReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	verdict := "pass"
	if !c.Pass {
		verdict = "fail"
		if c.Reason != "" {
			verdict += " (" + oneLine(c.Reason, 160) + ")"
		}
	}
	fmt.Fprintf(p.w, "[%d/%d] %s %s #%d: %s\n", p.n, p.total, c.Candidate, c.Example, c.Repeat, verdict)
}

func (p *lineProgress) Finish() {}

// barProgress redraws "[#####.....] n/total  failures f  candidate" on one
// line.
type barProgress struct {
	w     io.Writer
	mu    sync.Mutex
	n     int
	fails int
	total int
}

const barWidth = 30

func (p *barProgress) Start(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
	p.draw("")
}

func (p *barProgress) Done(c CallReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if !c.Pass {
		p.fails++
	}
	p.draw(c.Candidate)
}

func (p *barProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\n")
}

func (p *barProgress) draw(last string) {
	filled := 0
	if p.total > 0 {
		filled = p.n * barWidth / p.total
	}
	bar := strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled)
	fmt.Fprintf(p.w, "\r\x1b[K[%s] %d/%d calls, %d failed  %s", bar, p.n, p.total, p.fails, oneLine(last, 40))
}

// oneLine flattens s to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
