// Package httpllm is the HTTP machinery the API backends share
// (builtin.anthropic, builtin.openai, and through the latter
// builtin.local_llm): a client that bounds every request with a timeout
// and retries a refused or failed one with backoff, honouring the
// provider's retry-after, on the run's clock; a reader of server-sent
// events; the lookup of API keys; prices and costs. It is not a transport:
// each backend builds its requests and reads its answers itself.
package httpllm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// Defaults of a Client's bounded behaviours.
const (
	DefaultRetries      = 2
	DefaultBackoff      = time.Second
	DefaultMaxBackoff   = 30 * time.Second
	DefaultMaxRetryWait = time.Minute
	DefaultTimeout      = 5 * time.Minute
	// MaxBody bounds a response body read whole (16 MiB).
	MaxBody = 16 << 20
)

// Client sends one backend's requests. The zero value is not usable:
// build it with New.
type Client struct {
	// Name is what messages call the API: "anthropic API", "openai API".
	Name string
	// HTTP sends the requests.
	HTTP *http.Client
	// Clock is what retry waits are measured on (a fake clock in tests,
	// which moves instead of sleeping).
	Clock clock.Clock
	// Retries is how many times a retryable failure is sent again.
	Retries int
	// Backoff is the first wait, doubled before each later retry up to
	// MaxBackoff, when the server names none.
	Backoff, MaxBackoff time.Duration
	// MaxRetryWait is the longest retry-after waited for; a server
	// asking for more fails the call at once.
	MaxRetryWait time.Duration
	// Timeout bounds the wait for a response's headers and, while a
	// body is read, for its next bytes.
	Timeout time.Duration
	// Mask masks secret values (the API key) in every error.
	Mask *secret.Masker
	// ErrorDetail reads the provider's error body: its error type or code
	// and its message ("" when the body is not the provider's shape).
	ErrorDetail func(body []byte) (code, message string)
	Logger      *slog.Logger
}

// Options configure New; zero fields take the defaults.
type Options struct {
	Name         string
	HTTP         *http.Client
	Clock        clock.Clock
	Retries      int
	Backoff      time.Duration
	MaxBackoff   time.Duration
	MaxRetryWait time.Duration
	Timeout      time.Duration
	Secrets      []string
	ErrorDetail  func(body []byte) (code, message string)
	Logger       *slog.Logger
}

// New returns a client with o's settings and the defaults for the rest.
// Retries 0 is DefaultRetries; a negative Retries means none.
func New(o Options) *Client {
	c := &Client{Name: o.Name, HTTP: o.HTTP, Clock: o.Clock, Retries: o.Retries, Backoff: o.Backoff, MaxBackoff: o.MaxBackoff,
		MaxRetryWait: o.MaxRetryWait, Timeout: o.Timeout, Mask: secret.New(o.Secrets), ErrorDetail: o.ErrorDetail, Logger: o.Logger}
	if c.HTTP == nil {
		c.HTTP = &http.Client{}
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	switch {
	case c.Retries < 0:
		c.Retries = 0
	case c.Retries == 0:
		c.Retries = DefaultRetries
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = DefaultMaxRetryWait
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Request is one POST of a JSON body.
type Request struct {
	URL    string
	Header http.Header
	Body   []byte
}

// Stats counts what the requests of one call took; a call's requests
// share one.
type Stats struct {
	Requests int
	Retries  int
	Waited   time.Duration
}

// Call posts req and hands a 2xx response to read, which consumes its
// body (closed by Call). A 408, 409, 429 or 5xx answer, a failed
// connection, a timeout, and an error of read that is Retryable are sent
// again up to Retries times, after the wait the server asks for
// (retry-after-ms, retry-after) or else the backoff, measured on Clock.
// Failures come back as *APIError (the server refused), *ConnError (no
// answer) or read's own error, with secrets masked.
func (c *Client) Call(ctx context.Context, req Request, read func(*http.Response) error, st *Stats) error {
	if st == nil {
		st = &Stats{}
	}
	for attempt := 1; ; attempt++ {
		st.Requests++
		err := c.attempt(ctx, req, read, attempt)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait, retry := c.retryWait(err, attempt)
		if !retry {
			return c.mask(err)
		}
		c.Logger.Warn(c.Name+": retrying", "attempt", attempt+1, "wait", wait, "err", c.Mask.Text(err.Error()))
		st.Retries++
		st.Waited += wait
		if err := clock.Sleep(ctx, c.Clock, wait); err != nil {
			return err
		}
	}
}

// retryWait decides whether err is retried after attempt, and after how
// long.
func (c *Client) retryWait(err error, attempt int) (time.Duration, bool) {
	var ae *APIError
	var ce *ConnError
	switch {
	case errors.As(err, &ae):
		if !ae.retryable() || attempt > c.Retries {
			return 0, false
		}
		if ae.RetryAfter > c.MaxRetryWait {
			ae.TooLong = c.MaxRetryWait
			return 0, false
		}
		if ae.RetryAfter > 0 {
			return ae.RetryAfter, true
		}
	case errors.As(err, &ce), Retryable(err):
		if attempt > c.Retries {
			return 0, false
		}
	default:
		return 0, false
	}
	return c.backoff(attempt), true
}

// backoff is the wait before retry n (1 for the first).
func (c *Client) backoff(n int) time.Duration {
	d := c.Backoff
	for i := 1; i < n && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}

// attempt sends req once.
func (c *Client) attempt(ctx context.Context, req Request, read func(*http.Response) error, n int) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := newWatchdog(c.Timeout, func() { cancel(errTimeout) })
	defer w.stop()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return fmt.Errorf("%s: build the request: %w", c.Name, err)
	}
	for k, vs := range req.Header {
		hreq.Header[k] = vs
	}
	if hreq.Header.Get("Content-Type") == "" {
		hreq.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(hreq)
	if err != nil {
		return c.connError(actx, req.URL, err, n)
	}
	defer resp.Body.Close()
	resp.Body = w.reader(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return c.apiError(resp, body, n)
	}
	if err := read(resp); err != nil {
		if context.Cause(actx) == errTimeout && ctx.Err() == nil {
			return &ConnError{API: c.Name, URL: req.URL, Err: fmt.Errorf("the answer stopped for more than %s", c.Timeout), Attempts: n, Timeout: true}
		}
		return err
	}
	return nil
}

func (c *Client) connError(actx context.Context, url string, err error, n int) error {
	ce := &ConnError{API: c.Name, URL: url, Err: err, Attempts: n}
	if context.Cause(actx) == errTimeout {
		ce.Err, ce.Timeout = fmt.Errorf("no answer within %s", c.Timeout), true
	}
	return ce
}

// apiError reads a refusal.
func (c *Client) apiError(resp *http.Response, body []byte, n int) *APIError {
	e := &APIError{API: c.Name, Status: resp.StatusCode, Body: body, Attempts: n, RetryAfter: retryAfter(resp.Header, c.Clock.Now())}
	if c.ErrorDetail != nil {
		e.Code, e.Message = c.ErrorDetail(body)
	}
	if e.Message == "" {
		e.Message = string(bytes.TrimSpace(body))
	}
	return e
}

// mask masks secrets in an error's text.
func (c *Client) mask(err error) error {
	switch e := err.(type) {
	case *APIError:
		e.Message = c.Mask.Text(e.Message)
		e.Body = []byte(c.Mask.Text(string(e.Body)))
		return e
	case *ConnError:
		e.URL = c.Mask.Text(e.URL)
		e.Err = c.Mask.Error(e.Err)
		return e
	}
	return c.Mask.Error(err)
}

// retryAfter reads the wait a response asks for: retry-after-ms (the
// OpenAI API's), else retry-after in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

var errTimeout = errors.New("timeout")

// watchdog cancels a request whose server goes quiet for longer than its
// timeout: before the headers, and between reads of the body.
type watchdog struct {
	d     time.Duration
	mu    sync.Mutex
	timer *time.Timer
}

func newWatchdog(d time.Duration, fire func()) *watchdog {
	return &watchdog{d: d, timer: time.AfterFunc(d, fire)}
}

func (w *watchdog) kick() {
	w.mu.Lock()
	w.timer.Reset(w.d)
	w.mu.Unlock()
}

func (w *watchdog) stop() {
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
}

func (w *watchdog) reader(r io.ReadCloser) io.ReadCloser { return &kickReader{r: r, w: w} }

type kickReader struct {
	r io.ReadCloser
	w *watchdog
}

func (k *kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.w.kick()
	}
	return n, err
}

func (k *kickReader) Close() error { return k.r.Close() }

// ReadAll reads a whole response body of at most MaxBody bytes.
func ReadAll(resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, Retry(fmt.Errorf("read the answer: %w", err))
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("the answer is larger than %d MiB: refused", MaxBody>>20)
	}
	return b, nil
}
