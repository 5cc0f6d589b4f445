package story

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRetryLoadErrors(t *testing.T) {
	got := loadErr(t, filepath.Join("testdata", "retry", "bad.yaml"), nil)
	want := []string{
		`bad.yaml:8:9: states.start.on_enter[0].retry: retry: is only valid on an invoke effect (add invoke: <handler>)`,
		`bad.yaml:11:27: states.start.on_enter[1].retry.attempts: retry.attempts must be 2 to 10 (the first call included), got 1; drop retry: for a call made once`,
		`bad.yaml:14:16: states.start.on_enter[2].retry: retry needs attempts: (how many calls in all, the first included: 2 to 10)`,
		`bad.yaml:17:35: states.start.on_enter[3].retry.on[0]: retry.on: schema_invalid is never retried (the agent answered, with a submission its schema refuses; asking again costs a call and rarely helps): drop it, or handle the failure with on_error:`,
		`bad.yaml:17:51: states.start.on_enter[3].retry.on[1]: retry.on: unknown kind "transport_eror" (did you mean "transport_error"?) (one of plugin_crash, deadline_exceeded, transport_error, sub_event_namespace_violation, sub_event_call_id_mismatch, host_error)`,
		`bad.yaml:20:39: states.start.on_enter[4].retry.backoff: retry.backoff "soon" is not a duration (write e.g. "500ms", "2s", "1m"; "0s" for no wait)`,
		`bad.yaml:23:56: states.start.on_enter[5].retry.max_backoff: retry.max_backoff (2s) is shorter than retry.backoff (5s); raise it or drop it`,
		`bad.yaml:23:60: states.start.on_enter[5].retry.tries: unknown key "tries"`,
		`bad.yaml:27:9: states.start.on_enter[6].retry: retry: cannot be combined with background: true (a background job's call is made once; handle its failure in on_complete:)`,
		`bad.yaml:30:34: states.start.on_enter[7].retry.on: retry.on is empty: list the failure kinds to retry (plugin_crash, deadline_exceeded, transport_error, sub_event_namespace_violation, sub_event_call_id_mismatch, host_error), or drop on: for the default (plugin_crash, deadline_exceeded, transport_error)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRetryLoads(t *testing.T) {
	s := load(t, filepath.Join("testdata", "retry", "good.yaml"), nil)
	var got []*Retry
	for _, e := range s.States["start"].OnEnter {
		got = append(got, e.Invoke.Retry)
	}
	want := []*Retry{
		{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second, On: []string{"plugin_crash", "deadline_exceeded", "transport_error"}},
		{Attempts: 4, Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, On: []string{"host_error", "transport_error"}},
		{Attempts: 2, Backoff: 0, MaxBackoff: 30 * time.Second, On: []string{"deadline_exceeded"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Retry{}, "Pos")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", lines(s.Warnings))
	}
}

func TestRetryWait(t *testing.T) {
	r := &Retry{Attempts: 6, Backoff: time.Second, MaxBackoff: 5 * time.Second}
	var got []time.Duration
	for n := 2; n <= 6; n++ {
		got = append(got, r.Wait(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if (&Retry{}).Wait(3) != 0 {
		t.Error("a zero backoff waits")
	}
}
