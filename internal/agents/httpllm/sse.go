package httpllm

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// MaxEventBytes bounds one server-sent event's data.
const MaxEventBytes = 8 << 20

// Event is one server-sent event: its event: name ("" when the server
// sent none) and its data: lines joined with newlines.
type Event struct {
	Name string
	Data string
}

// Events reads a text/event-stream body and calls fn with each event in
// order, as the EventSource rules say: "event:" names it, "data:" lines
// add to it, a blank line dispatches it, lines starting with ":" are
// comments, and an event without data is skipped. A cut stream (its last
// event not ended by a blank line) is dispatched as far as it got only
// if fn never asked to stop; fn returning an error stops the reading
// with that error. io.EOF from fn stops it without one.
func Events(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxEventBytes)
	var ev Event
	var data strings.Builder
	hasData := false
	dispatch := func() error {
		if !hasData {
			ev = Event{}
			return nil
		}
		ev.Data = data.String()
		err := fn(ev)
		ev, hasData = Event{}, false
		data.Reset()
		return err
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if err := dispatch(); err != nil {
				return stopErr(err)
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Name = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
	}
	if err := sc.Err(); err != nil {
		return Retry(fmt.Errorf("read the event stream: %w", err))
	}
	return stopErr(dispatch())
}

func stopErr(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}
