package plugin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testAgent answers with the prompt, after sleeping prompt-many ms when the
// prompt is a number, failing or panicking on request.
var testAgent = AgentFunc(func(ctx context.Context, req *AskRequest) (*AskResponse, error) {
	switch req.Prompt {
	case "fail":
		return nil, errors.New("model unavailable")
	case "coded":
		return nil, &Error{Code: -32042, Message: "quota", Data: map[string]any{"retry_after": 3}}
	case "panic":
		panic("boom")
	case "nil":
		return nil, nil
	}
	var ms int
	if _, err := fmt.Sscan(req.Prompt, &ms); err == nil {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	return Submit(req.Prompt)
})

// serve runs ServeConn with testAgent on pipes (see onPipes).
func serve(t *testing.T) (send func(string), recv func() string, stop func() error) {
	t.Helper()
	return onPipes(t, "ServeConn", func(ctx context.Context, r io.Reader, w io.Writer) error {
		return ServeConn(ctx, r, w, testAgent)
	})
}

// onPipes runs a serve loop (ServeConn, ServeHostConn) on in-memory pipes
// and returns a writer of raw input, a reader of one output line, and
// stop, which closes the input and returns the loop's result (the test
// fails when the loop has not returned 5s after its input ended). The
// pipes are closed when the test ends.
func onPipes(t *testing.T, name string, run func(context.Context, io.Reader, io.Writer) error) (send func(string), recv func() string, stop func() error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), inR, outW) }()
	br := bufio.NewReader(outR)
	send = func(s string) {
		if _, err := io.WriteString(inW, s); err != nil {
			t.Fatal(err)
		}
	}
	recv = func() string {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		return strings.TrimSuffix(line, "\n")
	}
	stop = func() error {
		inW.Close()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal(name + " did not return after EOF")
			return nil
		}
	}
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return send, recv, stop
}

func ask(id, prompt string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"agent.ask","params":{"prompt":%q}}`+"\n", id, prompt)
}

func TestServeConnAnswers(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"result", ask("1", "hi <you>"), `{"jsonrpc":"2.0","id":1,"result":{"submission":"hi \u003cyou\u003e"}}`},
		{"string id", ask(`"a"`, "x"), `{"jsonrpc":"2.0","id":"a","result":{"submission":"x"}}`},
		{"id echoed as sent", ask(`"a\u0062"`, "x"), `{"jsonrpc":"2.0","id":"a\u0062","result":{"submission":"x"}}`},
		{"numeric id echoed as sent", ask("1e3", "x"), `{"jsonrpc":"2.0","id":1e3,"result":{"submission":"x"}}`},
		{"nil response", ask("2", "nil"), `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"agent error", ask("3", "fail"), `{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"model unavailable"}}`},
		{"plugin.Error", ask("4", "coded"), `{"jsonrpc":"2.0","id":4,"error":{"code":-32042,"message":"quota","data":{"retry_after":3}}}`},
		{"panic", ask("5", "panic"), `{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"agent panicked: boom"}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"agent.tell","params":{}}` + "\n",
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"method \"agent.tell\" not found (this plugin answers agent.ask)"}}`},
		{"missing params", `{"jsonrpc":"2.0","id":7,"method":"agent.ask"}` + "\n",
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"agent.ask: params are missing (want an AskRequest object)"}}`},
		{"bad params", `{"jsonrpc":"2.0","id":8,"method":"agent.ask","params":{"turn":"one"}}` + "\n",
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"agent.ask: params are not an AskRequest: json: cannot unmarshal string into Go struct field AskRequest.params.turn of type int"}}`},
		{"not json", "hello\n", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid character 'h' looking for beginning of value (line: \"hello\")"}}`},
		{"not utf-8", "{\"x\":\"caf\xe9\"}\n", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"message is not valid UTF-8 (line: \"{\\\"x\\\":\\\"caf\\xe9\\\"}\")"}}`},
		{"no method", `{"jsonrpc":"2.0","id":9}` + "\n", `{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"not a JSON-RPC request: method is missing"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			send, recv, stop := serve(t)
			send("\n")                                                        // blank lines are skipped
			send(`{"jsonrpc":"2.0","method":"agent.ask","params":{}}` + "\n") // a notification: ignored
			send(tc.in)
			if diff := cmp.Diff(tc.want, recv()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			send(ask("99", "still serving"))
			if got := recv(); got != `{"jsonrpc":"2.0","id":99,"result":{"submission":"still serving"}}` {
				t.Errorf("after the case: %s", got)
			}
			if err := stop(); err != nil {
				t.Errorf("ServeConn = %v at EOF, want nil", err)
			}
		})
	}
}

func TestServeConnAnswersConcurrentlyOutOfOrder(t *testing.T) {
	send, recv, stop := serve(t)
	send(ask("1", "300"))
	send(ask("2", "0"))
	first, second := recv(), recv()
	if !strings.Contains(first, `"id":2`) || !strings.Contains(second, `"id":1`) {
		t.Errorf("answers came as %s then %s; the quick call should not wait for the slow one", first, second)
	}
	stop()
}

func TestServeConnRefusesOverlongLineAndGoesOn(t *testing.T) {
	send, recv, stop := serve(t)
	go send(`{"prompt":"` + strings.Repeat("x", MaxMessageBytes) + "\"}\n" + ask("2", "after"))
	got := recv()
	if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"message exceeds the 16 MiB limit (line: \"{\\\"prompt\\\":\\\"xxx`) {
		t.Errorf("response to an over-long line: %.200s", got)
	}
	if got := recv(); got != `{"jsonrpc":"2.0","id":2,"result":{"submission":"after"}}` {
		t.Errorf("next response: %s", got)
	}
	stop()
}

func TestServeConnWaitsForCallsInFlightAtEOF(t *testing.T) {
	send, recv, stop := serve(t)
	send(ask("1", "200"))
	got := make(chan string, 1)
	go func() { got <- recv() }()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if line := <-got; line != `{"jsonrpc":"2.0","id":1,"result":{"submission":"200"}}` {
		t.Errorf("answer in flight at EOF: %s", line)
	}
}

func TestServeConnStopsWithContext(t *testing.T) {
	inR, _ := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeConn(ctx, inR, io.Discard, testAgent) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeConn = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeConn ignored its context")
	}
}

func TestLineStreamReadErrors(t *testing.T) {
	s := NewLineStream(strings.NewReader("{\"a\":1}\n\n{\"partial"), io.Discard, nil)
	var v map[string]any
	if err := s.ReadObject(&v); err != nil || v["a"] != float64(1) {
		t.Fatalf("first object: %v %v", v, err)
	}
	err := s.ReadObject(&v)
	var re *ReadError
	if !errors.As(err, &re) || err.Error() != `unexpected EOF (partial bytes: "{\"partial")` {
		t.Errorf("partial line: %v", err)
	}
	s = NewLineStream(strings.NewReader(""), io.Discard, nil)
	if err := s.ReadObject(&v); !errors.Is(err, io.EOF) {
		t.Errorf("clean end: %v, want io.EOF", err)
	}
}

// scriptedReader returns its chunks one per Read, each with its error.
type scriptedReader []struct {
	data string
	err  error
}

func (r *scriptedReader) Read(p []byte) (int, error) {
	if len(*r) == 0 {
		return 0, io.EOF
	}
	c := (*r)[0]
	*r = (*r)[1:]
	return copy(p, c.data), c.err
}

// A read deadline that cuts a line short is returned as it is, and the
// next read goes on with the same line, for kitsoki's subprocess client
// interrupts blocked reads that way.
func TestLineStreamResumesALineCutByADeadline(t *testing.T) {
	r := &scriptedReader{
		{`{"a":`, os.ErrDeadlineExceeded},
		{``, os.ErrDeadlineExceeded},
		{"1}\n{\"b\":2}\n", nil},
	}
	s := NewLineStream(r, io.Discard, nil)
	var got []string
	for range 2 {
		if _, err := s.ReadLine(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("cut read: %v, want os.ErrDeadlineExceeded", err)
		}
	}
	for range 2 {
		line, err := s.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	if diff := cmp.Diff([]string{`{"a":1}`, `{"b":2}`}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if _, err := s.ReadLine(); !errors.Is(err, io.EOF) {
		t.Errorf("end: %v, want io.EOF", err)
	}
}

// The watch timer starts a second reader only once the one answering has
// not read for readAhead (clock.Due's verdict); with a worker reading, or
// no call being answered, it stops watching.
func TestReadAheadDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	if start, wait := readAheadDue(false, 1, t0, t0); start || wait != readAhead {
		t.Errorf("a call just begun: %v, %v; want a look in readAhead", start, wait)
	}
	if start, _ := readAheadDue(false, 2, t0, t0.Add(5*readAhead)); !start {
		t.Error("a call past readAhead did not start a reader")
	}
	for name, gate := range map[string]struct {
		reader    bool
		answering int
	}{"someone reads": {true, 1}, "nothing answered": {false, 0}, "both": {true, 0}} {
		if start, wait := readAheadDue(gate.reader, gate.answering, t0, t0.Add(time.Hour)); start || wait != 0 {
			t.Errorf("%s: %v, %v; want no reader and no look", name, start, wait)
		}
	}
}
