package subprocess

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"sync"
)

// stderrLineLimit is the longest stderr line logged whole; the rest of a
// longer line is dropped from the log (it still reaches the tail).
const stderrLineLimit = 4 << 10

// stderrSink reads a plugin's stderr until EOF, logs it line by line, and
// keeps the last tailLimit bytes for crash details. Memory stays bounded
// whatever the plugin writes.
type stderrSink struct {
	logger    *slog.Logger
	tailLimit int
	secrets   []string

	mu      sync.Mutex
	tail    []byte
	dropped bool // older output fell off the tail

	done chan struct{} // closed at EOF
}

func newStderrSink(logger *slog.Logger, tailLimit int, secrets []string) *stderrSink {
	return &stderrSink{logger: logger, tailLimit: tailLimit, secrets: secrets, done: make(chan struct{})}
}

// run consumes r; it returns at EOF or on a read error and closes r.
func (s *stderrSink) run(r io.ReadCloser) {
	defer close(s.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, stderrLineLimit)
	truncated := false // inside an over-long line whose head was logged
	for {
		chunk, err := br.ReadSlice('\n')
		s.keep(chunk)
		switch {
		case err == nil:
			if !truncated {
				s.log(chunk, false)
			}
			truncated = false
		case errors.Is(err, bufio.ErrBufferFull):
			if !truncated {
				s.log(chunk, true)
			}
			truncated = true
		default:
			if len(chunk) > 0 && !truncated {
				s.log(chunk, false)
			}
			return
		}
	}
}

func (s *stderrSink) log(line []byte, truncated bool) {
	text := redact(string(bytes.TrimRight(line, "\r\n")), s.secrets)
	if truncated {
		s.logger.Info("plugin stderr", "line", text, "truncated", true)
		return
	}
	s.logger.Info("plugin stderr", "line", text)
}

// keep appends b to the tail, dropping old bytes beyond the limit.
func (s *stderrSink) keep(b []byte) {
	if len(b) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tail = append(s.tail, b...)
	if len(s.tail) > 2*s.tailLimit {
		n := copy(s.tail, s.tail[len(s.tail)-s.tailLimit:])
		s.tail = s.tail[:n]
		s.dropped = true
	}
}

// Tail returns the last tailLimit bytes written, with "..." in front when
// older output was dropped.
func (s *stderrSink) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tail) <= s.tailLimit {
		if s.dropped {
			return "..." + string(s.tail)
		}
		return string(s.tail)
	}
	return "..." + string(s.tail[len(s.tail)-s.tailLimit:])
}
