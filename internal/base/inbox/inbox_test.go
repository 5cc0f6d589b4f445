package inbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSummaryCountsUnread(t *testing.T) {
	b := New()
	for _, sev := range []string{"", Success, ActionRequired} {
		if _, err := b.Add(Notification{Severity: sev, Title: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	want := Summary{Unread: 3, NeedsAttention: 1, Severities: []string{ActionRequired, Info, Success}}
	if diff := cmp.Diff(want, b.Summary()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := b.MarkRead("n-3"); err != nil {
		t.Fatal(err)
	}
	want = Summary{Unread: 2, Severities: []string{Info, Success}}
	if diff := cmp.Diff(want, b.Summary()); diff != "" {
		t.Errorf("after read (-want +got):\n%s", diff)
	}
	if got := len(b.List(true)); got != 2 {
		t.Errorf("unread list: %d", got)
	}
}

func TestErrors(t *testing.T) {
	b := New()
	if _, err := b.MarkRead("n-1"); err == nil || err.Error() != `no notification "n-1": the inbox is empty` {
		t.Errorf("empty: %v", err)
	}
	_, err := b.Add(Notification{Severity: "urgent"})
	if want := `severity "urgent" is not one of info, success, warn, error, action_required`; err == nil || err.Error() != want {
		t.Errorf("bad severity: %v", err)
	}
	b.Add(Notification{Title: "x"})
	if _, err := b.MarkRead("n-7"); err == nil || err.Error() != `no notification "n-7" (the inbox holds n-1 … n-1)` {
		t.Errorf("unknown: %v", err)
	}
}
