package tui

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// MaxHistory is how many input lines a story's history keeps.
const MaxHistory = 1000

// HistoryFile is where the input history of the story at storyPath is
// kept: <state dir>/kitsoki/history/<first 16 hex digits of the SHA-256 of
// the story's absolute path>, the state dir being $XDG_STATE_HOME, else
// ~/.local/state. It is never inside the story's directory.
func HistoryFile(storyPath string) (string, error) {
	abs, err := filepath.Abs(storyPath)
	if err != nil {
		return "", err
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("no home directory for the input history: set XDG_STATE_HOME or HOME")
		}
		dir = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, "kitsoki", "history", hex.EncodeToString(sum[:8])), nil
}

// history is the input lines of earlier runs and this one, oldest first.
type history struct {
	path    string
	mask    func(string) string
	lines   []string
	pos     int    // browsing position; len(lines) = the draft
	draft   string // what was typed before browsing
	lastErr error
}

// loadHistory reads the history file (missing is empty). Lines are stored
// masked.
func loadHistory(path string, mask func(string) string) *history {
	h := &history{path: path, mask: mask}
	if h.mask == nil {
		h.mask = func(s string) string { return s }
	}
	if path != "" {
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64*1024), 1<<20)
			for sc.Scan() {
				if l := sc.Text(); l != "" {
					h.lines = append(h.lines, l)
				}
			}
			f.Close()
		}
		if len(h.lines) > MaxHistory {
			h.lines = h.lines[len(h.lines)-MaxHistory:]
			h.rewrite()
		}
	}
	h.pos = len(h.lines)
	return h
}

// add appends a submitted line (masked) and saves it; a line equal to the
// last one is not repeated.
func (h *history) add(line string) {
	line = strings.ReplaceAll(h.mask(line), "\n", " ")
	h.pos, h.draft = len(h.lines), ""
	if n := len(h.lines); n > 0 && h.lines[n-1] == line {
		return
	}
	h.lines = append(h.lines, line)
	h.pos = len(h.lines)
	if h.path == "" {
		return
	}
	if len(h.lines) > MaxHistory {
		h.lines = h.lines[len(h.lines)-MaxHistory:]
		h.pos = len(h.lines)
		h.rewrite()
		return
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		h.lastErr = err
		return
	}
	f, err := os.OpenFile(h.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		h.lastErr = err
		return
	}
	_, err = f.WriteString(line + "\n")
	h.lastErr = errors.Join(err, f.Close())
}

func (h *history) rewrite() {
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		h.lastErr = err
		return
	}
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(h.lines, "\n")+"\n"), 0o600); err != nil {
		h.lastErr = err
		return
	}
	h.lastErr = os.Rename(tmp, h.path)
}

// step moves through the history: older (up) or newer (down). cur is the
// input now, kept as the draft when browsing starts.
func (h *history) step(older bool, cur string) (string, bool) {
	if older {
		if h.pos == 0 {
			return "", false
		}
		if h.pos == len(h.lines) {
			h.draft = cur
		}
		h.pos--
		return h.lines[h.pos], true
	}
	if h.pos >= len(h.lines) {
		return "", false
	}
	h.pos++
	if h.pos == len(h.lines) {
		return h.draft, true
	}
	return h.lines[h.pos], true
}
