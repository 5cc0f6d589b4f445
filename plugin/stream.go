package plugin

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"unicode/utf8"
)

// MaxMessageBytes is the largest JSON-RPC message either end of a subprocess
// plugin connection accepts: one line, not counting its newline. A longer
// line is refused rather than buffered without bound.
const MaxMessageBytes = 16 << 20

// ErrMessageTooLarge is the cause of every refusal of a message longer than
// MaxMessageBytes.
var ErrMessageTooLarge = errors.New("message exceeds the 16 MiB limit")

// ErrInvalidUTF8 is the cause of every refusal of a message that is not
// valid UTF-8.
var ErrInvalidUTF8 = errors.New("message is not valid UTF-8")

// ReadError reports that the stream ended, or failed, before a whole line
// arrived. Partial holds the bytes of the unfinished line, if any.
type ReadError struct {
	Err     error
	Partial []byte
}

func (e *ReadError) Error() string {
	if len(e.Partial) == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v (partial bytes: %q)", e.Err, clip(e.Partial))
}

func (e *ReadError) Unwrap() error { return e.Err }

// FrameError reports a whole line that is not an acceptable message: too
// long (Err is ErrMessageTooLarge), not UTF-8 (ErrInvalidUTF8), or not a
// JSON-RPC object (Err is the decoding error). Line holds its first bytes.
type FrameError struct {
	Err  error
	Line []byte
}

func (e *FrameError) Error() string {
	if len(e.Line) == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v (line: %q)", e.Err, clip(e.Line))
}

func (e *FrameError) Unwrap() error { return e.Err }

// frameError copies the head of line, which lives in a reused buffer.
func frameError(err error, line []byte) *FrameError {
	return &FrameError{Err: err, Line: append([]byte(nil), line[:min(len(line), clipLimit+1)]...)}
}

// clipLimit is how many bytes of a bad line an error quotes.
const clipLimit = 256

func clip(b []byte) string {
	if len(b) <= clipLimit {
		return string(b)
	}
	return string(b[:clipLimit]) + "..."
}

// LineStream is the framing of the subprocess protocol, shared by kitsoki and
// this SDK: one compact JSON object per line, each line written whole in a
// single write, at most MaxMessageBytes, valid UTF-8. Blank lines are
// skipped. It implements github.com/sourcegraph/jsonrpc2's ObjectStream.
//
// It is jsonrpc2.NewPlainObjectStream with limits: that stream's json.Decoder
// buffers a value of any size and silently replaces invalid UTF-8, which a
// host talking to untrusted processes cannot afford.
type LineStream struct {
	r   *bufio.Reader
	w   io.Writer
	c   io.Closer
	max int

	// OnBadMessage, when set, turns the stream lenient for serving: a line
	// that is too long, not UTF-8 or not JSON is reported to it (with a
	// *FrameError) and skipped instead of ending the stream.
	OnBadMessage func(err error)

	rmu     sync.Mutex
	rbuf    []byte // reused for lines longer than the bufio buffer
	resumed bool   // rbuf holds the head of a line a read deadline cut short

	wmu  sync.Mutex
	wbuf bytes.Buffer
	enc  *json.Encoder
}

// NewLineStream returns a LineStream reading r and writing w. Close closes
// c, which may be nil.
func NewLineStream(r io.Reader, w io.Writer, c io.Closer) *LineStream {
	s := &LineStream{r: bufio.NewReaderSize(r, 64<<10), w: w, c: c, max: MaxMessageBytes}
	s.enc = json.NewEncoder(&s.wbuf)
	return s
}

// ReadObject reads the next message and decodes it into v.
func (s *LineStream) ReadObject(v any) error {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	for {
		line, err := s.readMessage()
		if err == nil {
			err = decode(line, v)
		}
		if err == nil {
			return nil
		}
		var fe *FrameError
		if s.OnBadMessage == nil || !errors.As(err, &fe) {
			return err
		}
		s.OnBadMessage(err)
	}
}

// decode unmarshals a message. A value that decodes itself (jsonrpc2's
// messages do) gets the bytes directly: it validates them anyway, and a
// second validation pass over a large message is pure cost.
func decode(line []byte, v any) error {
	var err error
	if u, ok := v.(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(line)
	} else {
		err = json.Unmarshal(line, v)
	}
	if err != nil {
		return frameError(err, line)
	}
	return nil
}

// ReadLine returns the next message as raw bytes, valid until the next
// read: a non-blank line within the size limit and valid UTF-8, not yet
// decoded. A bad line is a *FrameError; in lenient mode (OnBadMessage set)
// an over-long line has been skipped by then, so reading can go on.
func (s *LineStream) ReadLine() ([]byte, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.readMessage()
}

func (s *LineStream) readMessage() ([]byte, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			return nil, frameError(ErrInvalidUTF8, line)
		}
		return line, nil
	}
}

// readLine returns the next line without its newline. The slice is valid
// until the next call. A line over the limit is a *FrameError; in lenient
// mode the rest of it is discarded first. A read deadline of the
// underlying reader (os.ErrDeadlineExceeded) is returned as it is, and the
// bytes of the line read so far are kept for the next call, which goes on
// with that line.
func (s *LineStream) readLine() ([]byte, error) {
	if !s.resumed {
		s.rbuf = s.rbuf[:0]
	}
	s.resumed = false
	for {
		chunk, err := s.r.ReadSlice('\n')
		size := len(s.rbuf) + len(chunk)
		if err == nil {
			size-- // the newline
		}
		if size > s.max {
			// One byte past what an error quotes, so the quote shows "...".
			head := make([]byte, 0, clipLimit+1)
			head = append(head, s.rbuf[:min(len(s.rbuf), clipLimit+1)]...)
			head = append(head, chunk[:min(len(chunk), clipLimit+1-len(head))]...)
			s.rbuf = s.rbuf[:0]
			if s.OnBadMessage != nil && err != nil {
				s.discardLine()
			}
			return nil, &FrameError{Err: ErrMessageTooLarge, Line: head}
		}
		switch {
		case err == nil:
			if len(s.rbuf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			s.rbuf = append(s.rbuf, chunk[:len(chunk)-1]...)
			return s.rbuf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			s.rbuf = append(s.rbuf, chunk...)
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.rbuf = append(s.rbuf, chunk...)
			s.resumed = true
			return nil, err
		default:
			partial := append(s.rbuf, chunk...)
			if len(bytes.TrimSpace(partial)) == 0 {
				return nil, err
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, &ReadError{Err: err, Partial: append([]byte(nil), partial...)}
		}
	}
}

// discardLine skips input up to and including the next newline.
func (s *LineStream) discardLine() {
	for {
		_, err := s.r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// WriteObject encodes v as one line and writes it in a single call.
func (s *LineStream) WriteObject(v any) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf.Reset()
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	return s.writeLocked(s.wbuf.Bytes())
}

// WriteLine writes one pre-encoded message; a newline is added when missing.
func (s *LineStream) WriteLine(msg []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(msg) == 0 || msg[len(msg)-1] != '\n' {
		s.wbuf.Reset()
		s.wbuf.Write(msg)
		s.wbuf.WriteByte('\n')
		msg = s.wbuf.Bytes()
	}
	return s.writeLocked(msg)
}

func (s *LineStream) writeLocked(line []byte) error {
	if len(line)-1 > s.max {
		return ErrMessageTooLarge
	}
	if !utf8.Valid(line) {
		return ErrInvalidUTF8
	}
	_, err := s.w.Write(line)
	return err
}

// Close closes the underlying closer, if any.
func (s *LineStream) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}
