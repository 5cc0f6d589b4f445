package clock

import "time"

// Due reports whether period has passed between since and now, and if
// not, how long is left: the decision of a timer that looks again
// instead of being reset on every event (the subprocess wire's idle
// reader and the plugin SDK's read-ahead).
func Due(period time.Duration, since, now time.Time) (due bool, wait time.Duration) {
	if d := period - now.Sub(since); d > 0 {
		return false, d
	}
	return true, 0
}
