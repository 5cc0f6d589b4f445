package yamlnode

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem at a place in a YAML file, said the way the story
// loader says it (story.Diagnostic): "file:line:col: key.path: message".
// The parsers make it where they find the problem, knowing the node and
// the key path; the file is filled in by the caller that knows it
// (InFile).
type Error struct {
	File      string // "" until InFile names it
	Line, Col int
	Path      string // the key path, e.g. turns[2].expect_host_calls[0]; "" when the message says it
	Msg       string
	Err       error // the cause, when the message wraps one (%w)
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.File != "" {
		b.WriteByte(':')
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(max(e.Col, 1)))
		b.WriteByte(':')
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// At is an Error at node n (an alias is reported where it is written).
// format may wrap an error with %w.
func At(n *yaml.Node, path, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Path: path, Msg: err.Error(), Err: errors.Unwrap(err)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// InFile names file in err's *Error (the first one without a file). An
// error carrying no position gets the file as a prefix: "file: message".
func InFile(file string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.File == "" {
			e.File = file
		}
		return err
	}
	var x *ExpansionError
	if errors.As(err, &x) {
		return &Error{File: file, Line: x.Line, Col: x.Column, Msg: x.Reason(), Err: err}
	}
	return fmt.Errorf("%s: %w", file, err)
}

// Join is a key path: parent then key ("" parent: key alone).
func Join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
