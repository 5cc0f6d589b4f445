package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSealerRoundTrip(t *testing.T) {
	s := newSealer([]string{"tok", "long-token-value", "", "1"})
	in := map[string]any{
		"env":   map[string]any{"TOKEN": "long-token-value", "SHORT": "tok"},
		"cmd":   "echo long-token-value tok 1 \x00 \x00\x00 \x0012\x01",
		"list":  []any{"a1b", int64(1), 1.5, nil, true},
		"tok":   "key holds a secret",
		"plain": "nothing here",
	}
	sealed := s.seal(in)
	flat := strings.Join(strings.Fields(strings.ReplaceAll(cmp.Diff(nil, sealed), "\n", " ")), " ")
	for _, v := range []string{"long-token-value", "tok"} {
		if strings.Contains(flat, v) {
			t.Errorf("sealed args still hold %q: %s", v, flat)
		}
	}
	if got := sealed["plain"]; got != "nothing here" {
		t.Errorf("a string without a secret changed: %q", got)
	}
	if d := cmp.Diff(in, s.open(sealed)); d != "" {
		t.Errorf("open(seal(x)) (-x +got):\n%s", d)
	}
	// A story without secrets leaves the args as they are.
	none := newSealer(nil)
	if d := cmp.Diff(in, none.open(none.seal(in))); d != "" {
		t.Errorf("no secrets (-x +got):\n%s", d)
	}
}
