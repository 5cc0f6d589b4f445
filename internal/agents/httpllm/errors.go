package httpllm

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// APIError is a request the server refused: its status and what its
// error body says.
type APIError struct {
	API    string // "anthropic API"
	Status int
	// Code is the provider's error type or code (not_found_error,
	// model_not_found, rate_limit_error, ...); "" when it gave none.
	Code    string
	Message string
	Body    []byte
	// Attempts is how many requests were sent.
	Attempts int
	// RetryAfter is the wait the server asked for (0: none).
	RetryAfter time.Duration
	// TooLong is set when RetryAfter was longer than the client waits
	// (its limit).
	TooLong time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: http %d", e.API, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + agent.Clip([]byte(e.Message)))
	}
	switch {
	case e.TooLong > 0:
		fmt.Fprintf(&b, " (it asks to wait %s before retrying, longer than kitsoki waits, %s)", e.RetryAfter, e.TooLong)
	case e.Attempts > 1:
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// retryable reports a status worth sending again: a timeout, a
// conflict, a rate limit, a server error or an overload.
func (e *APIError) retryable() bool {
	return e.Status == 408 || e.Status == 409 || e.Status == 429 || e.Status >= 500
}

// ConnError is a request that got no answer: the connection failed, or
// the server stayed quiet past the timeout.
type ConnError struct {
	API      string
	URL      string
	Err      error
	Attempts int
	Timeout  bool
}

func (e *ConnError) Error() string {
	s := fmt.Sprintf("%s at %s is unreachable", e.API, e.URL)
	if e.Timeout {
		s = fmt.Sprintf("%s at %s did not answer", e.API, e.URL)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return s + " (" + e.Err.Error() + ")"
}

func (e *ConnError) Unwrap() error { return e.Err }

// Refused reports whether nothing listens at the address (connection
// refused, no such host), as opposed to a connection cut or a timeout.
func (e *ConnError) Refused() bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(e.Err, &dns) || (errors.As(e.Err, &op) && op.Op == "dial")
}

// retryErr marks an error of a response reader as worth a new request
// (a stream cut short, an overload reported mid-stream).
type retryErr struct{ err error }

func (r retryErr) Error() string { return r.err.Error() }
func (r retryErr) Unwrap() error { return r.err }

// Retry marks err as retryable: Call sends the request again.
func Retry(err error) error { return retryErr{err} }

// Retryable reports whether err was marked with Retry.
func Retryable(err error) bool {
	var r retryErr
	return errors.As(err, &r)
}
