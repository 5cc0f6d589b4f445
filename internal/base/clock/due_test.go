package clock

import (
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const period = time.Millisecond
	cases := []struct {
		name    string
		elapsed time.Duration
		due     bool
		wait    time.Duration
	}{
		{"just now", 0, false, period},
		{"under the period", period / 4, false, period * 3 / 4},
		{"at the period", period, true, 0},
		{"long past", time.Minute, true, 0},
		{"since in the future", -period, false, 2 * period},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			due, wait := Due(period, t0, t0.Add(tc.elapsed))
			if due != tc.due || wait != tc.wait {
				t.Errorf("Due = %v, %v; want %v, %v", due, wait, tc.due, tc.wait)
			}
		})
	}
}
