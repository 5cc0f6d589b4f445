package testrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// An iface.<name>.<op> call matches expect_host_calls and the list form of
// expect_no_host_calls by its interface name and by <handler>.<op> of the
// handler the interface is bound to (Kitsoki's fixtures name the latter).
func TestInterfaceCallsMatchBoundHandler(t *testing.T) {
	evs := []capturedEvent{
		{typed: trace.HarnessDispatched{Namespace: "iface.artifact.create", Args: map[string]any{"kind": "feature"}}},
		{typed: trace.HarnessDispatched{Namespace: "iface.vcs.branch"}},
		{typed: trace.HarnessDispatched{Namespace: "host.run"}},
	}
	route := func(name string) string {
		if op, ok := strings.CutPrefix(name, "iface.artifact."); ok {
			return "host.cypilot_artifacts." + op
		}
		return ""
	}
	calls := dispatched(evs, route)
	if d := cmp.Diff([]string{"host.cypilot_artifacts.create", "", ""}, []string{calls[0].Routed, calls[1].Routed, calls[2].Routed}); d != "" {
		t.Errorf("bound names (-want +got):\n%s", d)
	}
	tests := []struct {
		name string
		exps []HostCallExpect
		want []string
	}{
		{"bound name", []HostCallExpect{{Handler: "host.cypilot_artifacts.create", Args: map[string]any{"kind": "feature"}}}, nil},
		{"interface name", []HostCallExpect{{Handler: "iface.artifact.create"}}, nil},
		{"bound handler", []HostCallExpect{{Handler: "host.cypilot_artifacts"}}, nil},
		{"other op", []HostCallExpect{{Handler: "host.cypilot_artifacts.validate"}},
			[]string{"expect_host_calls[0]: host.cypilot_artifacts.validate was not called, want at least once [iface.artifact.create iface.vcs.branch host.run]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, checkHostCalls("expect_host_calls", tt.exps, false, calls)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	got := checkNoHostCallsOf("expect_no_host_calls", []string{"host.cypilot_artifacts.create", "host.git"}, calls)
	want := []string{"expect_no_host_calls: host.cypilot_artifacts.create was called 1 time(s), want none: [iface.artifact.create]"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("expect_no_host_calls (-want +got):\n%s", d)
	}
}

func TestLoadRecordingErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"kind", "kind: cassette\nentries: []\n", "r.yaml:1:1: kind must be recording"},
		{"unknown key", "kind: recording\nentrys: []\n", `r.yaml:2:1: recording: unknown key "entrys" (valid: kind, app_id, app_version, generated_at, generator, min_confidence, entries)`},
		{"no intent name", "kind: recording\nentries:\n  - {state: a, input: b, intent: {slots: {}}}\n", "r.yaml:3:34: entries[0].intent must be {name, slots} with a name"},
		{"no state", "kind: recording\nentries:\n  - {input: b, intent: {name: x}}\n", "r.yaml:3:5: entries[0].state must be a non-empty string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "r.yaml")
			if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadRecording(p)
			if err == nil || strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)) != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
}
