package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// FuzzStream feeds arbitrary bytes as a plugin's stdout to the framing the
// subprocess agent reads it with (plugin.LineStream, the result shortcut of
// stream, jsonrpc2), with agent.ask call 1 in flight, and checks the call
// ends with what the same bytes give through plain jsonrpc2 framing
// without the shortcut: the same result bytes, or the same RPC error, or
// no answer. A result is then decoded as an AskResponse or refused with a
// plugin_crash. No process is started: the input is the child's stdout.
func FuzzStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		params := []byte(`{"prompt":"hi","verb":"decide"}`)

		// The agent's framing.
		p := &process{}
		stdout, stdin := gatedPipe(in)
		s := newStream(plugin.NewLineStream(stdout, stdin, nil), p)
		conn := jsonrpc2.NewConn(ctx, s, jsonrpc2.HandlerWithError(refuseIncoming(p)),
			jsonrpc2.OnSend(s.onSend), jsonrpc2.SetLogger(quiet{}))
		s.stage(1, params)
		w, err := conn.DispatchCall(ctx, plugin.MethodAsk, nil, jsonrpc2.PickID(jsonrpc2.ID{Num: 1}))
		s.unstage(1)
		if err != nil {
			conn.Close()
			t.Skipf("the input ended the connection before the request was written: %v", err)
		}
		got := outcome{err: w.Wait(ctx, nil)}
		if got.err == nil {
			got.raw, got.ok = s.result(1)
		} else {
			s.abandon(1)
		}
		conn.Close()
		<-conn.DisconnectNotify()

		// Plain framing: jsonrpc2 decodes the response itself.
		pout, pin := gatedPipe(in)
		ps := plugin.NewLineStream(pout, pin, nil)
		pp := &process{}
		pconn := jsonrpc2.NewConn(ctx, ps, jsonrpc2.HandlerWithError(refuseIncoming(pp)), jsonrpc2.SetLogger(quiet{}))
		pw, err := pconn.DispatchCall(ctx, plugin.MethodAsk, json.RawMessage(params), jsonrpc2.PickID(jsonrpc2.ID{Num: 1}))
		if err != nil {
			pconn.Close()
			t.Skipf("plain framing: %v", err)
		}
		var raw json.RawMessage
		want := outcome{err: pw.Wait(ctx, &raw)}
		if want.err == nil {
			want.raw, want.ok = raw, raw != nil
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
			t.Fatalf("the shortcut kept a result that is not JSON: %q", got.raw)
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

// refuseIncoming ends the connection on a request from the plugin, as
// process.handleIncoming does (which also kills the child there is not).
func refuseIncoming(p *process) func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) {
	return func(_ context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		p.fail(errors.New("plugin sent a " + kindOf(req)))
		c.Close()
		return nil, &jsonrpc2.Error{Code: plugin.CodeInvalidRequest, Message: "plugins may only send responses"}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
