package routes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Pins is what became of a story's selection: pins: the route of every
// pinned invoke (honoured or not), and one warning per pin that was not
// honoured.
type Pins struct {
	Routes   map[*story.Invoke]*host.Route
	Warnings []string
}

// Err is nil when every pin was honoured, else an error listing the
// warnings: what `--strict-pins` turns them into.
func (p *Pins) Err() error {
	if len(p.Warnings) == 0 {
		return nil
	}
	return fmt.Errorf("pins not honoured (--strict-pins):\n  %s", strings.Join(p.Warnings, "\n  "))
}

// Resolve acts on the selection: block of every host.agent.* invoke
// of a loaded story (eval-format.md §6). A pin (a selection naming a
// profile, model or effort) is honoured when its evidence report exists,
// matches the call site's current hashes, and its candidate for the pinned
// profile/model/effort passed: the call is then routed there. Otherwise
// the call goes to selection.fallback_profile, or where its agent: field
// says, and a warning names the call, the report and why. A selection with
// only evidence: is metadata and routes nothing.
func Resolve(st *story.Story) *Pins {
	out := &Pins{Routes: map[*story.Invoke]*host.Route{}}
	src := newSourceCache(st.Dir)
	for _, r := range walkAllInvokes(st) {
		inv := r.eff.Invoke
		if len(inv.Selection) == 0 {
			continue
		}
		name := callName(r)
		sel, err := parseSelection(inv.Selection)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("pin for call %s ignored: %v", name, err))
			continue
		}
		if sel.Profile == "" && sel.Model == "" && sel.Effort == "" {
			continue
		}
		if !strings.HasPrefix(inv.Name, host.AgentNamespace) {
			out.Warnings = append(out.Warnings, fmt.Sprintf("pin for call %s ignored: %s is not a host.agent.* call", name, inv.Name))
			continue
		}
		route, reason := honour(st, src, r, sel)
		if reason == "" {
			out.Routes[inv] = route
			continue
		}
		route, using := fallbackRoute(st, inv, sel)
		route.Pin = &host.PinState{Evidence: sel.Evidence, Reason: reason}
		out.Routes[inv] = route
		out.Warnings = append(out.Warnings, fmt.Sprintf("pin for call %s not applied: %s; %s", name, reason, using))
	}
	return out
}

// callName names an invoke in messages: its id, else where it is.
func callName(r siteRef) string {
	if r.eff.Invoke.ID != "" {
		return fmt.Sprintf("%q", r.eff.Invoke.ID)
	}
	return fmt.Sprintf("in state %q (%s:%d)", r.state, r.eff.Pos.File, r.eff.Pos.Line)
}

// parseSelection reads a selection: block; every field is a string.
func parseSelection(m map[string]any) (*Pin, error) {
	p := &Pin{}
	fields := map[string]*string{
		"profile": &p.Profile, "model": &p.Model, "effort": &p.Effort,
		"evidence": &p.Evidence, "fallback_profile": &p.FallbackProfile,
	}
	for _, k := range sortedKeys(m) {
		dst, ok := fields[k]
		if !ok {
			continue
		}
		switch v := m[k].(type) {
		case string:
			*dst = v
		case nil:
		default:
			return nil, fmt.Errorf("selection.%s must be a string, got %v", k, v)
		}
	}
	return p, nil
}

// honour checks a pin's evidence and returns the pinned route, or why the
// pin cannot be honoured.
func honour(st *story.Story, src *sourceCache, r siteRef, sel *Pin) (*host.Route, string) {
	inv := r.eff.Invoke
	if sel.Evidence == "" {
		return nil, "it cites no evidence report (set selection.evidence to the call's latest.json)"
	}
	if _, err := st.Workspace.Resolve(st.Dir, sel.Evidence); err != nil && !st.Workspace.IsZero() {
		return nil, fmt.Sprintf("evidence %v", err)
	}
	path := StoryPath(st.Dir, sel.Evidence)
	rep, err := readEvidence(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Sprintf("evidence %s is missing (run kitsoki eval run --live to produce it)", sel.Evidence)
	case err != nil:
		return nil, fmt.Sprintf("evidence %s is unreadable: %v", sel.Evidence, err)
	}
	if inv.ID != "" && rep.Call != inv.ID {
		return nil, fmt.Sprintf("evidence %s is a report for call %q, not %q", sel.Evidence, rep.Call, inv.ID)
	}
	site, err := src.site(r)
	if err != nil {
		return nil, fmt.Sprintf("cannot read the call site to check evidence %s: %v", sel.Evidence, err)
	}
	cur := SiteHashes(st, site)
	cur.Dataset = HashFile(datasetOf(path, rep))
	if diff := rep.Hashes().Diff(cur); len(diff) > 0 {
		return nil, fmt.Sprintf("evidence %s is stale (%s changed since it was measured; re-run the eval)", sel.Evidence, strings.Join(diff, ", "))
	}
	profile := sel.Profile
	if profile == "" {
		profile = defaultProfile(inv)
	}
	want := &Pin{Profile: profile, Model: sel.Model, Effort: sel.Effort}
	label := profile + "/" + sel.Model
	if sel.Effort != "" {
		label += " effort=" + sel.Effort
	}
	i := slices.IndexFunc(rep.Candidates, func(c evidenceCandidate) bool { return want.Matches(c.Profile, c.Model, c.Effort) })
	if i < 0 {
		return nil, fmt.Sprintf("evidence %s is failing: it measured no candidate %s", sel.Evidence, label)
	}
	if !rep.Candidates[i].Pass {
		return nil, fmt.Sprintf("evidence %s is failing: candidate %s did not pass the adherence bar", sel.Evidence, rep.Candidates[i].Label())
	}
	route, _, err := ProfileRoute(st, profile)
	if err != nil {
		return nil, err.Error()
	}
	route.Model, route.Effort = sel.Model, sel.Effort
	route.Pin = &host.PinState{Applied: true, Evidence: sel.Evidence}
	return route, ""
}

// datasetOf finds the dataset a report was produced from: reports live in
// <dataset dir>/reports/<call>/, and the report's eval is the dataset's
// file name. "" when it is not there.
func datasetOf(reportPath string, rep *evidence) string {
	dir := filepath.Dir(filepath.Dir(filepath.Dir(reportPath)))
	for _, ext := range []string{".yaml", ".yml"} {
		p := filepath.Join(dir, rep.Eval+ext)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// defaultProfile is the profile of an invoke's own route.
func defaultProfile(inv *story.Invoke) string {
	if inv.Agent != "" {
		return inv.Agent
	}
	return host.ProfileClaude
}

// fallbackRoute is where an unhonoured pin's call goes: the fallback
// profile when it resolves, else the invoke's own route.
func fallbackRoute(st *story.Story, inv *story.Invoke, sel *Pin) (*host.Route, string) {
	def := &host.Route{Profile: defaultProfile(inv), Alias: inv.Agent}
	defMsg := fmt.Sprintf("using the default route (%s)", def.Profile)
	if sel.FallbackProfile == "" {
		return def, defMsg
	}
	r, _, err := ProfileRoute(st, sel.FallbackProfile)
	if err != nil {
		return def, fmt.Sprintf("fallback_profile cannot be used (%v); %s", err, defMsg)
	}
	return r, fmt.Sprintf("using fallback profile %q", sel.FallbackProfile)
}
