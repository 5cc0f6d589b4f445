package story

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Timeout is a state's timeout: (TimeoutDef): once the session has rested
// in the state for After on the session's clock, it moves to Target.
type Timeout struct {
	After  time.Duration
	Target string // resolved state path
	Pos    Pos
}

var timeoutKeys = &keySpec{v1: []string{"after", "target"}}

// ParseDuration reads a duration as stories write it: a Go duration
// ("500ms", "8m", "2h30m") or whole days, alone or leading ("10d",
// "1d12h"), which Go durations do not have.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || n > 100000 {
			return 0, fmt.Errorf("invalid number of days in %q", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	return days + d, nil
}

// loadTimeout reads timeout: {after, target}.
func (l *loader) loadTimeout(f *file, e entry, path string, s *State) {
	fs, ok := l.fields(f, e.val, path, timeoutKeys)
	if !ok {
		return
	}
	to := &Timeout{Pos: l.pos(f, deref(e.val))}
	good := true
	if a, ok := fs.get("after"); !ok {
		l.errAt(f, e.key, path, "timeout needs after: (how long the state waits, e.g. \"30s\", \"8m\", \"10d\")")
		good = false
	} else if raw, ok := l.str(f, a.val, joinPath(path, "after")); ok {
		d, err := ParseDuration(raw)
		switch {
		case err != nil:
			l.errAt(f, a.val, joinPath(path, "after"), "timeout.after %q is not a duration (write e.g. \"500ms\", \"30s\", \"8m\", \"2h\" or \"10d\")", raw)
			good = false
		case d <= 0:
			l.errAt(f, a.val, joinPath(path, "after"), "timeout.after must be longer than zero, got %q", raw)
			good = false
		default:
			to.After = d
		}
	} else {
		good = false
	}
	t, ok := fs.get("target")
	if !ok {
		l.errAt(f, e.key, path, "timeout needs target: (the state to move to when the time is up)")
		return
	}
	raw, ok := l.str(f, t.val, joinPath(path, "target"))
	if !ok {
		return
	}
	if isTemplated(raw) {
		l.errAt(f, t.val, joinPath(path, "target"), "timeout.target must name a state; a template target is allowed only in an arm's target:")
		return
	}
	if !good {
		return
	}
	l.targets = append(l.targets, &targetRef{
		f: f, n: deref(t.val), path: joinPath(path, "target"), raw: raw, state: s,
		set: func(target string, stay bool) {
			to.Target = target
			if !stay {
				s.Timeout = to
			}
		},
	})
	if strings.TrimSpace(raw) == "." {
		l.errAt(f, t.val, joinPath(path, "target"), "timeout.target \".\" would stay where the state already is; name the state to move to")
	}
}
