package testrunner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

func TestFlowRequestHash(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"f.yaml": "test_kind: flow\napp: " + mustAbs(t, shopApp) + "\nhost_cassette: c.yaml\nturns:\n  - intent: {name: add}\n  - intent: {name: pay}\n    expect_world: {receipt: R-1}\n",
		"c.yaml": "kind: host_cassette\nepisodes:\n  - {id: charge, match: {handler: host.pay}, request_hash: 0123456789abcdef, response: {data: {receipt: R-1}}}\n",
	})
	now := cassette.HostRequestHash("host.pay.charge", map[string]any{"amount": 1, "call": "charge", "op": "charge"})
	mismatch := `cassette episode 1 "charge" (host.pay): recorded for a different request (hash 0123456789abcdef ≠ ` + now + `)`
	tests := []struct {
		name   string
		strict bool
		want   string
	}{
		{"warn", false, "PASS  f.yaml\n  warning: turn 2: " + mismatch + "\n"},
		{"strict", true, "FAIL  f.yaml\n  FAIL  turn 2 → cart\n  ✗ expect_world[\"receipt\"]: got \"\" (string), want \"R-1\" (string)\n" +
			"  ✗ expect_world: world differs (-want +got):\n      map[string]any{\n    - \t\"receipt\": string(\"R-1\"),\n    + \t\"receipt\": string(\"\"),\n      }\n" +
			"  ✗ " + mismatch + "; refused under --cassette-strict\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runFile(t, filepath.Join(dir, "f.yaml"), WithCassetteStrict(tt.strict))
			got := strings.ReplaceAll(report(res, false), "\u00a0", " ")
			if got != tt.want {
				t.Errorf("report:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
