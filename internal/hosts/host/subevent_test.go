package host

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// TestSubEventKindHoldingASecret: event kinds are never masked, so a
// sub-event whose kind holds one of the story's (long) secrets is refused
// as a namespace violation; a short value inside a kind is not a secret
// by the masking rule and passes.
func TestSubEventKindHoldingASecret(t *testing.T) {
	mask := secret.New([]string{"sk-live-0123456789", "crash"})
	for _, tc := range []struct {
		kind, want string
	}{
		{"agent.judge.sk-live-0123456789", "sub_event[0]: Kind holds a secret value; event kinds are never masked, so it cannot be written"},
		{"agent.judge.crash", ""},
		{"agent.judge.note", ""},
	} {
		err := checkSubEvents([]plugin.Event{{Kind: tc.kind, CallID: "c1"}}, "agent.judge", "c1", mask)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.kind, err)
		case tc.want != "" && (err == nil || err.Kind != agent.KindSubEventNamespaceViolation || err.Detail != tc.want):
			t.Errorf("%s: got %v, want %s: %s", tc.kind, err, agent.KindSubEventNamespaceViolation, tc.want)
		}
	}
}
