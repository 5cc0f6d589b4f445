package mcphttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kitsoki/kitsoki/plugin"
)

// errBodyTooLarge and errBodyNotUTF8 end a response body read early.
var (
	errBodyTooLarge = errors.New("response body exceeds the 16 MiB limit")
	errBodyNotUTF8  = errors.New("response body is not valid UTF-8")
)

// errorBodyLimit is how much of an error response's body is kept.
const errorBodyLimit = 64 << 10

// recorder collects what mcp-go does not report precisely about one
// request: the HTTP status and body of a failed response, a JSON-RPC error
// with its code, and why a body was refused. It travels in the request's
// context, so concurrent calls each have their own.
type recorder struct {
	mu sync.Mutex
	observed
}

// observed is what a recorder saw of the latest request.
type observed struct {
	status  int
	body    []byte
	rpcErr  *mcp.JSONRPCErrorDetails
	neither bool // a response with neither result nor error
	bodyErr error
	// sseEnded is set when an SSE response stream reached its end, so a
	// call that got no response can say so.
	sseEnded bool
}

type recorderKey struct{}

func withRecorder(ctx context.Context, r *recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

func recorderFrom(ctx context.Context) *recorder {
	r, _ := ctx.Value(recorderKey{}).(*recorder)
	return r
}

// startRequest forgets what an earlier request of the same call left.
func (r *recorder) startRequest() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observed = observed{}
}

func (r *recorder) snapshot() observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.observed
}

// roundTripper adds the declared headers to every request (DELETE
// included), records failed responses, and guards response bodies: at most
// 16 MiB, valid UTF-8.
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	// assumeJSON makes an untyped 200 body JSON: servers written for
	// Kitsoki's single POST often send JSON without a Content-Type.
	assumeJSON atomic.Bool
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := recorderFrom(req.Context())
	if rec != nil {
		rec.startRequest()
	}
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rec != nil {
			rec.mu.Lock()
			rec.status, rec.body = resp.StatusCode, body
			rec.mu.Unlock()
		}
		return resp, nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if t.assumeJSON.Load() && resp.StatusCode == http.StatusOK && mt != "application/json" && mt != "text/event-stream" {
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.Body = &guardedBody{rc: resp.Body, rec: rec, sse: mt == "text/event-stream"}
	return resp, nil
}

// guardedBody refuses a body over plugin.MaxMessageBytes or with invalid
// UTF-8, checking as it streams so nothing is buffered without bound.
type guardedBody struct {
	rc    io.ReadCloser
	rec   *recorder
	sse   bool // an SSE stream: its end is noted on rec
	total int
	carry []byte // an incomplete rune at the end of the last chunk
	err   error
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.total += n
	switch {
	case b.total > plugin.MaxMessageBytes:
		return 0, b.refuse(errBodyTooLarge)
	case !b.validUTF8(p[:n], errors.Is(err, io.EOF)):
		return 0, b.refuse(errBodyNotUTF8)
	}
	if b.sse && errors.Is(err, io.EOF) && b.rec != nil {
		b.rec.mu.Lock()
		b.rec.sseEnded = true
		b.rec.mu.Unlock()
	}
	return n, err
}

func (b *guardedBody) refuse(err error) error {
	b.err = err
	if b.rec != nil {
		b.rec.mu.Lock()
		b.rec.bodyErr = err
		b.rec.mu.Unlock()
	}
	return err
}

// validUTF8 checks chunk, holding back an incomplete trailing rune for the
// next chunk; at EOF nothing may be held back.
func (b *guardedBody) validUTF8(chunk []byte, eof bool) bool {
	data := chunk
	if len(b.carry) > 0 {
		data = append(b.carry, chunk...)
	}
	end := len(data)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(data); k++ {
		if utf8.RuneStart(data[len(data)-k]) {
			if !utf8.FullRune(data[len(data)-k:]) {
				end = len(data) - k
			}
			break
		}
	}
	if !utf8.Valid(data[:end]) {
		return false
	}
	b.carry = append(b.carry[:0], data[end:]...)
	return !eof || len(b.carry) == 0
}

func (b *guardedBody) Close() error { return b.rc.Close() }

// recordingTransport is mcp-go's Streamable HTTP transport, noting the
// JSON-RPC error code and message that mcp-go's client turns into plain
// errors. Every other method is the embedded transport's.
type recordingTransport struct {
	*transport.StreamableHTTP
}

func (t recordingTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	if rec := recorderFrom(ctx); rec != nil && resp != nil {
		rec.mu.Lock()
		switch {
		case resp.Error != nil:
			rec.rpcErr = resp.Error
		case len(bytes.TrimSpace(resp.Result)) == 0:
			rec.neither = true
		}
		rec.mu.Unlock()
	}
	return resp, err
}
