package story

import (
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// Retry is an invoke's retry: block: a call that failed with one of On is
// issued again, up to Attempts calls in all, waiting Backoff before the
// second and twice the previous wait before each later one (at most
// MaxBackoff).
type Retry struct {
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// On lists the failure kinds retried: agent error kinds
	// (agent.ErrorKind) and RetryHostError. schema_invalid is never in it.
	On  []string
	Pos Pos
}

// RetryHostError is the retry: on: kind of a failure that is not an
// agent's (a host handler's or a host plugin's error).
const RetryHostError = "host_error"

// Defaults of retry: keys.
const (
	DefaultRetryBackoff    = time.Second
	DefaultRetryMaxBackoff = 30 * time.Second
	MaxRetryAttempts       = 10
)

// DefaultRetryOn is what retry: retries when it has no on: the failures
// that may well not recur (a crashed plugin, a deadline, a transport).
var DefaultRetryOn = []string{string(agent.KindPluginCrash), string(agent.KindDeadlineExceeded), string(agent.KindTransportError)}

// retryKinds are the kinds on: accepts.
var retryKinds = []string{string(agent.KindPluginCrash), string(agent.KindDeadlineExceeded), string(agent.KindTransportError),
	string(agent.KindSubEventNamespaceViolation), string(agent.KindSubEventCallIDMismatch), RetryHostError}

var retryKeys = &keySpec{v1: []string{"attempts", "backoff", "max_backoff", "on"}}

// Retries reports whether kind is one r retries.
func (r *Retry) Retries(kind string) bool { return r != nil && slices.Contains(r.On, kind) }

// Wait is the backoff before attempt n (2 for the first retry).
func (r *Retry) Wait(n int) time.Duration {
	d := r.Backoff
	for i := 2; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// loadRetry reads an invoke's retry: {attempts, backoff, max_backoff, on}.
func (l *loader) loadRetry(f *file, n *yaml.Node, path string) *Retry {
	fs, ok := l.fields(f, n, path, retryKeys)
	if !ok {
		return nil
	}
	r := &Retry{Backoff: DefaultRetryBackoff, MaxBackoff: DefaultRetryMaxBackoff, On: DefaultRetryOn, Pos: l.pos(f, deref(n))}
	good := true
	if a, ok := fs.get("attempts"); !ok {
		l.errAt(f, deref(n), path, "retry needs attempts: (how many calls in all, the first included: 2 to %d)", MaxRetryAttempts)
		good = false
	} else if v, ok := l.integer(f, a.val, joinPath(path, "attempts")); !ok {
		good = false
	} else if v < 2 || v > MaxRetryAttempts {
		l.errAt(f, a.val, joinPath(path, "attempts"), "retry.attempts must be 2 to %d (the first call included), got %d; drop retry: for a call made once", MaxRetryAttempts, v)
		good = false
	} else {
		r.Attempts = int(v)
	}
	dur := func(key string, dst *time.Duration) bool {
		e, ok := fs.get(key)
		if !ok {
			return true
		}
		p := joinPath(path, key)
		raw, ok := l.str(f, e.val, p)
		if !ok {
			return false
		}
		d, err := ParseDuration(raw)
		if err != nil || d < 0 {
			l.errAt(f, e.val, p, "retry.%s %q is not a duration (write e.g. \"500ms\", \"2s\", \"1m\"; \"0s\" for no wait)", key, raw)
			return false
		}
		*dst = d
		return true
	}
	good = dur("backoff", &r.Backoff) && good
	okMax := dur("max_backoff", &r.MaxBackoff)
	good = okMax && good
	if _, set := fs.get("max_backoff"); okMax && set && r.MaxBackoff < r.Backoff {
		l.errAt(f, fs.at("max_backoff").val, joinPath(path, "max_backoff"), "retry.max_backoff (%s) is shorter than retry.backoff (%s); raise it or drop it", r.MaxBackoff, r.Backoff)
		good = false
	} else if !set {
		r.MaxBackoff = max(r.MaxBackoff, r.Backoff)
	}
	if e, ok := fs.get("on"); ok {
		p := joinPath(path, "on")
		var kinds []string
		d := deref(e.val)
		if d != nil && d.Kind == yaml.ScalarNode {
			if s, ok := l.str(f, d, p); ok {
				kinds = []string{s}
			}
		} else if s, ok := l.strList(f, d, p); ok {
			kinds = s
		} else {
			good = false
		}
		var out []string
		for i, k := range kinds {
			kp, kn := p, d
			if d.Kind == yaml.SequenceNode {
				kp, kn = indexPath(p, i), d.Content[i]
			}
			switch {
			case k == string(agent.KindSchemaInvalid):
				l.errAt(f, kn, kp, "retry.on: schema_invalid is never retried (the agent answered, with a submission its schema refuses; "+
					"asking again costs a call and rarely helps): drop it, or handle the failure with on_error:")
				good = false
			case !slices.Contains(retryKinds, k):
				l.errAt(f, kn, kp, "retry.on: unknown kind %q%s (one of %s)", k, didYouMean(k, retryKinds), strings.Join(retryKinds, ", "))
				good = false
			case !slices.Contains(out, k):
				out = append(out, k)
			}
		}
		if len(kinds) == 0 && good {
			l.errAt(f, deref(e.val), p, "retry.on is empty: list the failure kinds to retry (%s), or drop on: for the default (%s)",
				strings.Join(retryKinds, ", "), strings.Join(DefaultRetryOn, ", "))
			good = false
		}
		r.On = out
	}
	if !good {
		return nil
	}
	return r
}
