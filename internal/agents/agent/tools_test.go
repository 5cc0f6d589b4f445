package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExposedToolName(t *testing.T) {
	long := "agent." + strings.Repeat("x", 60)
	cases := []struct {
		alias, name, want string
	}{
		{"agent.tagger", "add_tag", "kitsoki_agent_tagger_add_tag"},
		{"agent.Tag-Bot", "add", "kitsoki_agent_tag_bot_add"},
		{"agent.a..b", "x", "kitsoki_agent_a__b_x"},                                                  // every character is replaced, none merged
		{"agent.café/v2", "x", "kitsoki_agent_caf___v2_x"},                                           // é is two bytes, each replaced
		{"agent.-edge-.", "x", "kitsoki_agent__edge_x"},                                              // leading/trailing _ trimmed from the slug
		{"agent." + strings.Repeat("a", 48), "t", "kitsoki_agent_" + strings.Repeat("a", 48) + "_t"}, // 64: fits
		{"agent." + strings.Repeat("a", 49), "t", "kitsoki_agent_" + strings.Repeat("a", 39) + "_" + hashOf("agent."+strings.Repeat("a", 49)) + "_t"},
		{long, strings.Repeat("n", 32), "kitsoki_agent_xxxxxxxx_" + hashOf(long) + "_" + strings.Repeat("n", 32)},
	}
	for _, c := range cases {
		got := ExposedToolName(c.alias, c.name)
		if got != c.want {
			t.Errorf("ExposedToolName(%q, %q) = %q, want %q", c.alias, c.name, got, c.want)
		}
		if len(got) > MaxExposedToolName {
			t.Errorf("ExposedToolName(%q, %q) is %d characters, over 64", c.alias, c.name, len(got))
		}
	}
	// Long aliases that share their first characters still differ.
	a, b := "agent."+strings.Repeat("z", 70)+"one", "agent."+strings.Repeat("z", 70)+"two"
	if ExposedToolName(a, "t") == ExposedToolName(b, "t") {
		t.Errorf("two long aliases collide: %s", ExposedToolName(a, "t"))
	}
	// The hash is stable.
	if first, again := ExposedToolName(a, "t"), ExposedToolName(a, "t"); first != again {
		t.Error("the derivation is not stable")
	}
	// A name of exactly 64 characters is kept whole; 65 takes the hash.
	fits := ExposedToolName("agent."+strings.Repeat("a", 48), "t")
	over := ExposedToolName("agent."+strings.Repeat("a", 49), "t")
	if len(fits) != 64 || len(over) != 64 || strings.Contains(fits, hashOf("agent."+strings.Repeat("a", 48))) {
		t.Errorf("boundary: %q (%d), %q (%d)", fits, len(fits), over, len(over))
	}
}

func hashOf(alias string) string {
	full := ExposedToolName(alias, strings.Repeat("q", 32))
	parts := strings.Split(strings.TrimSuffix(full, "_"+strings.Repeat("q", 32)), "_")
	return parts[len(parts)-1]
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"add_tag": true, "a": true, "0day": true, strings.Repeat("a", 32): true,
		strings.Repeat("a", 33): false, "": false, "_x": false, "Add": false, "add-tag": false, "add tag": false, "é": false,
	} {
		if got := ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestPluginSlug(t *testing.T) {
	for alias, want := range map[string]string{"agent.tagger": "agent_tagger", "agent.Tag-Bot": "agent_tag_bot", "__agent.x__": "agent_x"} {
		if got := PluginSlug(alias); got != want {
			t.Errorf("PluginSlug(%q) = %q, want %q", alias, got, want)
		}
	}
}

// countingAgent counts its closes.
type countingAgent struct{ closed *int }

func (countingAgent) Ask(context.Context, *Call) (*AskResponse, error) { return nil, nil }
func (a countingAgent) Close() error                                   { *a.closed++; return nil }

func TestReconfigureClosesChangedAgents(t *testing.T) {
	r := NewRegistry(nil)
	closed := map[string]*int{}
	builds := 0
	r.RegisterTransport("fake", func(d Declaration, _ BuildEnv) (Agent, error) {
		builds++
		if closed[d.Alias] == nil {
			closed[d.Alias] = new(int)
		}
		return countingAgent{closed[d.Alias]}, nil
	})
	decl := func(alias, cmd string, enabled bool) Declaration {
		return Declaration{Alias: alias, Plugin: "fake", Command: cmd, Enabled: enabled}
	}
	r.Configure(map[string]Declaration{"agent.same": decl("agent.same", "a", true), "agent.changed": decl("agent.changed", "a", true),
		"agent.toggled": decl("agent.toggled", "a", true), "agent.gone": decl("agent.gone", "a", true)})
	for _, a := range []string{"agent.same", "agent.changed", "agent.toggled", "agent.gone"} {
		if _, err := r.Get(a); err != nil {
			t.Fatal(err)
		}
	}
	stale := r.Reconfigure(map[string]Declaration{"agent.same": decl("agent.same", "a", true),
		"agent.changed": decl("agent.changed", "b", true), "agent.toggled": decl("agent.toggled", "a", false)})
	if diff := cmp.Diff([]string{"agent.changed", "agent.gone"}, stale); diff != "" {
		t.Errorf("closed agents (-want +got):\n%s", diff)
	}
	got := map[string]int{}
	for a, n := range closed {
		got[a] = *n
	}
	if diff := cmp.Diff(map[string]int{"agent.same": 0, "agent.changed": 1, "agent.toggled": 0, "agent.gone": 1}, got); diff != "" {
		t.Errorf("closes (-want +got):\n%s", diff)
	}
	if _, err := r.Get("agent.changed"); err != nil || builds != 5 {
		t.Errorf("the changed agent is rebuilt on next use: err=%v builds=%d", err, builds)
	}
	if _, err := r.Get("agent.gone"); err == nil {
		t.Error("a dropped alias still resolves")
	}
}
