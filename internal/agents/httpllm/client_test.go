package httpllm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

func detail(body []byte) (string, string) {
	var e struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Type, e.Error.Message
}

// scripted answers the nth request with statuses[n] (the last one from
// then on); a 200 carries {"ok":true}.
func scripted(t *testing.T, hdr http.Header, statuses ...int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		st := statuses[min(i, len(statuses)-1)]
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(st)
		if st == 200 {
			io.WriteString(w, `{"ok":true}`)
			return
		}
		io.WriteString(w, `{"error":{"type":"rate_limit_error","message":"slow down, key sk-secret-123"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func call(c *Client, url string, st *Stats) (string, error) {
	var got string
	err := c.Call(context.Background(), Request{URL: url, Body: []byte(`{}`)}, func(r *http.Response) error {
		b, err := ReadAll(r)
		got = string(b)
		return err
	}, st)
	return got, err
}

func TestRetryHonoursRetryAfterOnTheClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	srv, n := scripted(t, http.Header{"Retry-After": {"7"}}, 429, 200)
	c := New(Options{Name: "test API", Clock: fake, ErrorDetail: detail})
	st := &Stats{}
	got, err := call(c, srv.URL, st)
	if err != nil || got != `{"ok":true}` {
		t.Fatalf("got %q, %v", got, err)
	}
	if n.Load() != 2 {
		t.Errorf("%d requests, want 2", n.Load())
	}
	if d := fake.Now().Sub(start); d != 7*time.Second {
		t.Errorf("waited %s on the clock, want the 7s retry-after asked", d)
	}
	if diff := cmp.Diff(Stats{Requests: 2, Retries: 1, Waited: 7 * time.Second}, *st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestServerErrorsExhaustTheRetries(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	srv, n := scripted(t, nil, 500)
	c := New(Options{Name: "test API", Clock: fake, Retries: 2, ErrorDetail: detail, Secrets: []string{"sk-secret-123"}})
	_, err := call(c, srv.URL, nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 500 || ae.Attempts != 3 {
		t.Fatalf("error %v, want a 500 APIError after 3 attempts", err)
	}
	if n.Load() != 3 {
		t.Errorf("%d requests, want 3", n.Load())
	}
	if d := fake.Now().Sub(start); d != 3*time.Second {
		t.Errorf("waited %s, want the 1s+2s backoff", d)
	}
	want := "test API: http 500 rate_limit_error: slow down, key [REDACTED] (after 3 attempts)"
	if strings.Contains(err.Error(), "sk-secret-123") || !strings.Contains(err.Error(), "(after 3 attempts)") {
		t.Errorf("error %q: want the key masked, like %q", err, want)
	}
}

func TestRefusalsAreNotRetried(t *testing.T) {
	srv, n := scripted(t, nil, 404)
	c := New(Options{Name: "test API", Clock: clock.NewFake(time.Time{}), ErrorDetail: detail})
	_, err := call(c, srv.URL, nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 404 || n.Load() != 1 {
		t.Fatalf("error %v after %d requests, want one 404", err, n.Load())
	}
}

func TestRetryAfterTooLongFailsAtOnce(t *testing.T) {
	srv, n := scripted(t, http.Header{"Retry-After": {"3600"}}, 429)
	c := New(Options{Name: "test API", Clock: clock.NewFake(time.Time{}), ErrorDetail: detail})
	_, err := call(c, srv.URL, nil)
	if err == nil || !strings.Contains(err.Error(), "asks to wait 1h0m0s before retrying, longer than kitsoki waits, 1m0s") || n.Load() != 1 {
		t.Fatalf("error %v after %d requests", err, n.Load())
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	c := New(Options{Name: "test API", Clock: clock.NewFake(time.Time{}), Retries: 1})
	_, err = call(c, url, nil)
	var ce *ConnError
	if !errors.As(err, &ce) || !ce.Refused() || ce.Attempts != 2 {
		t.Fatalf("error %v, want a refused ConnError after 2 attempts", err)
	}
	if !strings.HasPrefix(err.Error(), "test API at "+url+" is unreachable after 2 attempts (") {
		t.Errorf("error %q", err)
	}
}

func TestTimeoutWhileTheServerIsQuiet(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := New(Options{Name: "test API", Clock: clock.NewFake(time.Time{}), Retries: -1, Timeout: 20 * time.Millisecond})
	_, err := call(c, srv.URL, nil)
	var ce *ConnError
	if !errors.As(err, &ce) || !ce.Timeout || !strings.Contains(err.Error(), "did not answer (no answer within 20ms)") {
		t.Fatalf("error %v, want a timeout", err)
	}
}

func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tc := range cases {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("retryAfter(%v) = %s, want %s", tc.h, got, tc.want)
		}
	}
}

func TestEvents(t *testing.T) {
	in := ": a comment\nevent: message_start\ndata: {\"a\":1}\n\nevent: ping\ndata: {}\r\n\r\ndata: one\ndata: two\n\nevent: lonely\n\ndata: [DONE]"
	var got []Event
	err := Events(strings.NewReader(in), func(e Event) error { got = append(got, e); return nil })
	want := []Event{{"message_start", `{"a":1}`}, {"ping", "{}"}, {"", "one\ntwo"}, {"", "[DONE]"}}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	n := 0
	err = Events(strings.NewReader(in), func(Event) error { n++; return io.EOF })
	if err != nil || n != 1 {
		t.Errorf("io.EOF stops quietly: %v after %d events", err, n)
	}
}

func TestPrices(t *testing.T) {
	p, ok := PriceFor(ProviderAnthropic, "claude-opus-4-5-20251101", nil)
	if !ok || p.InputPerMTok != 5 {
		t.Errorf("opus 4.5: %+v %v", p, ok)
	}
	if p, ok = PriceFor(ProviderAnthropic, "claude-opus-4-1-20250805", nil); !ok || p.InputPerMTok != 15 {
		t.Errorf("opus 4.1: %+v %v", p, ok)
	}
	if p, ok = PriceFor(ProviderOpenAI, "gpt-5-mini-2025-08-07", nil); !ok || p.OutputPerMTok != 2 {
		t.Errorf("gpt-5-mini: %+v %v", p, ok)
	}
	if _, ok = PriceFor(ProviderOpenAI, "qwen2.5-coder", nil); ok {
		t.Error("an unknown model has a price")
	}
	own := &agent.Pricing{InputPerMTok: 1, OutputPerMTok: 2}
	if p, ok = PriceFor(ProviderOpenAI, "qwen2.5-coder", own); !ok || p != *own {
		t.Errorf("override: %+v %v", p, ok)
	}
	// 1M input at $3, 1M output at $15, 1M cache reads at $0.30, 1M cache
	// writes at $3.75.
	got := Cost(agent.Pricing{InputPerMTok: 3, OutputPerMTok: 15}, Tokens{1e6, 1e6, 1e6, 1e6})
	if got < 22.0499 || got > 22.0501 {
		t.Errorf("cost %v, want 22.05", got)
	}
}

func TestKey(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "from-process", "MINE": "mine"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cases := []struct {
		d          agent.Declaration
		name, want string
	}{
		{agent.Declaration{}, "ANTHROPIC_API_KEY", "from-process"},
		{agent.Declaration{APIKeyEnv: "MINE"}, "MINE", "mine"},
		{agent.Declaration{Env: map[string]string{"ANTHROPIC_API_KEY": "from-decl"}}, "ANTHROPIC_API_KEY", "from-decl"},
		{agent.Declaration{APIKeyEnv: "NOPE"}, "NOPE", ""},
	}
	for _, tc := range cases {
		name, v := Key(tc.d, "ANTHROPIC_API_KEY", lookup)
		if name != tc.name || v != tc.want {
			t.Errorf("Key(%+v) = %s=%q, want %s=%q", tc.d, name, v, tc.name, tc.want)
		}
	}
}
