package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

// FuzzStream feeds arbitrary bytes as a plugin's stdout to the client the
// subprocess agent reads it with (plugin.LineStream and conn, the agent's
// own JSON-RPC client), with agent.ask call 1 in flight, and checks the
// call ends with what the same bytes give through plain jsonrpc2 framing:
// the same result bytes, or the same RPC error, or no answer. A result is
// then decoded as an AskResponse or refused with a plugin_crash. No
// process is started: the input is the child's stdout.
func FuzzStream(f *testing.F) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		params := []byte(`{"prompt":"hi","verb":"decide"}`)

		// The agent's client.
		stdout, stdin := gatedPipe(in)
		c := newConn(plugin.NewLineStream(stdout, stdin, nil), nil, logger, func(error) {})
		raw, err := c.call(ctx, 1, plugin.MethodAsk, params)
		var we *writeError
		if errors.As(err, &we) {
			c.close()
			t.Skipf("the request could not be written: %v", err)
		}
		got := outcome{raw: raw, ok: err == nil, err: err}
		c.close()
		<-c.done

		// Plain framing: jsonrpc2 decodes the response itself.
		pout, pin := gatedPipe(in)
		ps := plugin.NewLineStream(pout, pin, nil)
		pconn := jsonrpc2.NewConn(ctx, ps, jsonrpc2.HandlerWithError(refuseIncoming), jsonrpc2.SetLogger(quiet{}))
		pw, err := pconn.DispatchCall(ctx, plugin.MethodAsk, json.RawMessage(params), jsonrpc2.PickID(jsonrpc2.ID{Num: 1}))
		if err != nil {
			pconn.Close()
			t.Skipf("plain framing: %v", err)
		}
		var praw json.RawMessage
		want := outcome{err: pw.Wait(ctx, &praw)}
		if want.err == nil {
			want.raw, want.ok = praw, praw != nil
		}
		pconn.Close()
		<-pconn.DisconnectNotify()

		if (got.err == nil) != (want.err == nil) {
			t.Fatalf("call ended with %v; plain framing: %v", got.err, want.err)
		}
		var gre, wre *jsonrpc2.Error
		if errors.As(got.err, &gre) != errors.As(want.err, &wre) || (gre != nil && (gre.Code != wre.Code || gre.Message != wre.Message)) {
			t.Fatalf("call ended with %v; plain framing: %v", got.err, want.err)
		}
		if got.err != nil {
			return
		}
		if !json.Valid(got.raw) && got.ok {
			t.Fatalf("the client kept a result that is not JSON: %q", got.raw)
		}
		if !bytes.Equal(compact(got.raw), compact(want.raw)) {
			t.Fatalf("result %q; plain framing gives %q", got.raw, want.raw)
		}
		if !got.ok {
			return
		}
		if _, err := decodeResult(got.raw); err != nil {
			var ae *agent.AskError
			if !errors.As(err, &ae) || ae.Kind != agent.KindPluginCrash {
				t.Fatalf("decodeResult error %v, want a plugin_crash AskError", err)
			}
		}
	})
}

// gatedPipe is a plugin's stdout holding in and its stdin: stdout has
// nothing to read until the first request is written to stdin, as a
// plugin cannot answer before it was asked.
func gatedPipe(in []byte) (io.Reader, io.Writer) {
	g := &gate{open: make(chan struct{}), r: bytes.NewReader(in)}
	return g, g
}

type gate struct {
	once sync.Once
	open chan struct{}
	r    *bytes.Reader
}

func (g *gate) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

func (g *gate) Write(p []byte) (int, error) {
	g.once.Do(func() { close(g.open) })
	return len(p), nil
}

type outcome struct {
	raw []byte
	ok  bool
	err error
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// refuseIncoming ends the connection on a request or notification from
// the plugin, as conn.dispatch does (the process then kills the child).
func refuseIncoming(_ context.Context, c *jsonrpc2.Conn, _ *jsonrpc2.Request) (any, error) {
	c.Close()
	return nil, &jsonrpc2.Error{Code: plugin.CodeInvalidRequest, Message: "plugins may only send responses"}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
