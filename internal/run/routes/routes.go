// Package routes turns a story's selection: pins into host routes: which
// profile, model and effort each pinned host.agent.* call takes, checked
// against the eval report the pin cites (eval-format.md §6). It also holds
// what that check needs and evals share: the call-site walk, the four
// hashes, and profile names → routes. The composition root
// (internal/run/runtime) applies the pins the same way for every run; eval
// writes the reports they cite.
package routes

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Pin is a profile/model/effort choice backed by an evidence report. The
// same fields make up an invoke's selection: block and an eval dataset's
// selection.pinned (eval-format.md §6).
type Pin struct {
	Profile         string `yaml:"profile" json:"profile,omitempty"`
	Model           string `yaml:"model" json:"model,omitempty"`
	Effort          string `yaml:"effort" json:"effort,omitempty"`
	Evidence        string `yaml:"evidence" json:"evidence,omitempty"`
	FallbackProfile string `yaml:"fallback_profile" json:"fallback_profile,omitempty"`
}

// Label is "profile/model", the form listings show.
func (p *Pin) Label() string {
	if p == nil || (p.Profile == "" && p.Model == "") {
		return ""
	}
	return p.Profile + "/" + p.Model
}

// Matches reports whether a measured candidate is the one the pin names:
// the same profile, and the same model and effort where the pin sets them.
func (p *Pin) Matches(profile, model, effort string) bool {
	return profile == p.Profile && (p.Model == "" || model == p.Model) && (p.Effort == "" || effort == p.Effort)
}

// BackendBuiltin is the backend of the built-in claude path.
const BackendBuiltin = "builtin.claude"

// ProfileRoute resolves a profile name in a story to a host route:
//
//   - "claude" is the built-in claude path (an invoke with no agent:);
//   - an agent_plugins alias ("agent.local", or "local" for short) routes
//     the call to that plugin;
//   - a providers: entry routes the call to the built-in claude path
//     through that provider.
//
// backend names what answers: the plugin type, or BackendBuiltin.
func ProfileRoute(st *story.Story, profile string) (route *host.Route, backend string, err error) {
	switch {
	case profile == "":
		return nil, "", fmt.Errorf("profile is empty")
	case profile == host.ProfileClaude:
		return &host.Route{Profile: profile}, BackendBuiltin, nil
	}
	for _, alias := range []string{profile, "agent." + profile} {
		if d, ok := st.Plugins[alias]; ok {
			return &host.Route{Profile: profile, Alias: alias}, d.Plugin, nil
		}
	}
	if _, ok := st.Providers[profile]; ok {
		return &host.Route{Profile: profile, Provider: profile}, BackendBuiltin, nil
	}
	// A .kitsoki.yaml profile, added to the story's declarations as
	// profile.<name> (internal/run/profiles).
	if d, ok := st.Plugins["profile."+profile]; ok {
		return &host.Route{Profile: profile, Alias: "profile." + profile}, d.Plugin, nil
	}
	return nil, "", fmt.Errorf("profile %q is neither %q (the built-in claude path), an agent_plugins alias (%s), a providers: entry (%s) nor a .kitsoki.yaml profile",
		profile, host.ProfileClaude, listOrNone(storyAliases(st)), listOrNone(sortedKeys(st.Providers)))
}

// storyAliases are the story's own agent_plugins aliases (without the
// profiles' declarations).
func storyAliases(st *story.Story) []string {
	var out []string
	for _, a := range sortedKeys(st.Plugins) {
		if !strings.HasPrefix(a, "profile.") {
			out = append(out, a)
		}
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none declared"
	}
	return strings.Join(s, ", ")
}

// KindReport is the kind of an eval report.
const KindReport = "agent_eval_report"

// evidence is the part of an eval report (eval.Report, eval-format.md §5)
// a pin is checked against: which call and eval it measured, the hashes of
// what it measured, and each candidate's verdict.
type evidence struct {
	Kind        string              `json:"kind"`
	Eval        string              `json:"eval"`
	Call        string              `json:"call"`
	DatasetHash string              `json:"dataset_hash"`
	PromptHash  string              `json:"prompt_hash"`
	SchemaHash  string              `json:"schema_hash"`
	ToolboxHash string              `json:"toolbox_hash"`
	Candidates  []evidenceCandidate `json:"candidates"`
}

type evidenceCandidate struct {
	Profile string `json:"profile"`
	Model   string `json:"model"`
	Effort  string `json:"effort"`
	Pass    bool   `json:"pass"`
}

// Label is "profile/model", with " effort=<e>" when an effort is set (as
// eval.Candidate.Label).
func (c *evidenceCandidate) Label() string {
	s := c.Profile + "/" + c.Model
	if c.Effort != "" {
		s += " effort=" + c.Effort
	}
	return s
}

// Hashes returns the report's four hashes.
func (r *evidence) Hashes() Hashes {
	return Hashes{Dataset: r.DatasetHash, Prompt: r.PromptHash, Schema: r.SchemaHash, Toolbox: r.ToolboxHash}
}

// readEvidence reads the report a pin cites.
func readEvidence(path string) (*evidence, error) {
	return ReadReport(path, func(r *evidence) string { return r.Kind })
}

// ReadReport reads the eval report file at path into a T (eval.Report,
// or the evidence a pin is checked against) and checks that kindOf it is
// KindReport; its errors are the ones `kitsoki eval` and the pin checks
// print.
func ReadReport[T any](path string, kindOf func(*T) string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	r := new(T)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if k := kindOf(r); k != KindReport {
		return nil, fmt.Errorf("read report %s: kind must be %s, got %q", path, KindReport, k)
	}
	return r, nil
}
