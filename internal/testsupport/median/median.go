// Package median reports, in benchmarks, the median duration of single
// operations besides Go's mean ns/op: the project's speed targets are
// stated on the median, which one slow iteration cannot move.
package median

import (
	"slices"
	"testing"
	"time"
)

// Report adds the metric "median-ns/op", the median of times, to b. It
// sorts times; with none it reports nothing.
func Report(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/op")
}
