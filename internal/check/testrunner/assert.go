package testrunner

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// hostCall is one dispatched call as the trace recorded it.
type hostCall struct {
	Namespace string
	Args      map[string]any
	// Routed is, for an iface.<name>.<op> invoke, the handler's own name
	// it was routed to (<handler>.<op>); "" otherwise.
	Routed string
}

// under reports whether the call is to handler or under it, by the name
// the story invoked or, for an interface, the handler it was routed to
// (Kitsoki's fixtures expect either).
func (c hostCall) under(handler string) bool {
	return underHandler(c.Namespace, handler) || (c.Routed != "" && underHandler(c.Routed, handler))
}

// jsonEqual is the fixtures' value equality: identical JSON encodings.
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// showValue renders a value for a failure message: its JSON and Go type.
func showValue(v any) string {
	j, err := json.Marshal(v)
	if err != nil {
		j = []byte(fmt.Sprint(v))
	}
	return fmt.Sprintf("%s (%T)", clipValue(string(j)), v)
}

// checkKeys compares the listed keys of want against got. label names the
// assertion (expect_world, expect_slots, ...). A mismatch adds one line per
// key and, when diff is set, a go-cmp diff of the listed keys.
func checkKeys(label string, want, got map[string]any, diff bool) []string {
	var fails []string
	for _, k := range sortedKeys(want) {
		g := got[k]
		if !jsonEqual(g, want[k]) {
			fails = append(fails, fmt.Sprintf("%s[%q]: got %s, want %s", label, k, showValue(g), showValue(want[k])))
		}
	}
	if len(fails) > 0 && diff {
		sub := make(map[string]any, len(want))
		for k := range want {
			sub[k] = got[k] // an absent key shows as null, as it compares
		}
		fails = append(fails, worldDiff(label, want, sub))
	}
	return fails
}

// worldDiff is a readable go-cmp diff (-want +got) of two world maps, both
// normalised through JSON so only differences a fixture can see show.
func worldDiff(label string, want, got map[string]any) string {
	w, _ := cassette.NormalizeJSON(want)
	g, _ := cassette.NormalizeJSON(got)
	return fmt.Sprintf("%s: world differs (-want +got):\n%s", label, strings.TrimRight(cmp.Diff(w, g), "\n"))
}

// checkWorldFull compares the whole world: the exact key set and values.
func checkWorldFull(want, got map[string]any) []string {
	var fails []string
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			fails = append(fails, fmt.Sprintf("expect_world_full: unexpected key %q = %s", k, showValue(got[k])))
		}
	}
	for _, k := range sortedKeys(want) {
		if g, ok := got[k]; !ok {
			fails = append(fails, fmt.Sprintf("expect_world_full: missing key %q (want %s)", k, showValue(want[k])))
		} else if !jsonEqual(g, want[k]) {
			fails = append(fails, fmt.Sprintf("expect_world_full[%q]: got %s, want %s", k, showValue(g), showValue(want[k])))
		}
	}
	if len(fails) > 0 {
		fails = append(fails, worldDiff("expect_world_full", want, got))
	}
	return fails
}

// subset reports whether every entry of want is in got (recursively for
// maps; other values by JSON equality).
func subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return jsonEqual(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !subset(wv, gv) {
			return false
		}
	}
	return true
}

// underHandler reports whether an invoke name is handler or under it.
func underHandler(ns, handler string) bool {
	return ns == handler || strings.HasPrefix(ns, handler+".")
}

// checkHostCalls asserts expect_host_calls and expect_no_host_calls over
// the calls dispatched in a turn (or a whole flow).
func checkHostCalls(label string, exps []HostCallExpect, none bool, calls []hostCall) []string {
	var fails []string
	for i, e := range exps {
		n := 0
		for _, c := range calls {
			if c.under(e.Handler) && (e.ID == "" || fmt.Sprint(c.Args["call"]) == e.ID) && (e.Args == nil || subset(e.Args, c.Args)) {
				n++
			}
		}
		what := e.Handler
		if e.ID != "" {
			what += fmt.Sprintf(" (id %s)", e.ID)
		}
		if e.Args != nil {
			j, _ := json.Marshal(e.Args)
			what += " with args " + clipValue(string(j))
		}
		switch {
		case e.HasTime && n != e.Times:
			fails = append(fails, fmt.Sprintf("%s[%d]: %s called %d time(s), want %d", label, i, what, n, e.Times))
		case !e.HasTime && n == 0:
			fails = append(fails, fmt.Sprintf("%s[%d]: %s was not called, want at least once%s", label, i, what, calledList(calls)))
		}
	}
	if none && len(calls) > 0 {
		fails = append(fails, fmt.Sprintf("expect_no_host_calls: %d host call(s) dispatched:%s", len(calls), calledList(calls)))
	}
	return fails
}

// checkNoHostCallsOf asserts expect_no_host_calls written as a list: no
// call (answered or dropped) to any of the handlers, exactly or under it.
func checkNoHostCallsOf(label string, handlers []string, calls []hostCall) []string {
	var fails []string
	for _, h := range handlers {
		var hit []hostCall
		for _, c := range calls {
			if c.under(h) {
				hit = append(hit, c)
			}
		}
		if len(hit) > 0 {
			fails = append(fails, fmt.Sprintf("%s: %s was called %d time(s), want none:%s", label, h, len(hit), calledList(hit)))
		}
	}
	return fails
}

func calledList(calls []hostCall) string {
	if len(calls) == 0 {
		return " (no host calls were dispatched)"
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Namespace
	}
	return " [" + strings.Join(names, " ") + "]"
}

// turnView is what a turn's assertions look at.
type turnView struct {
	out    *orchestrator.Outcome
	world  map[string]any
	before map[string]any  // the world before the turn, when an assertion needs it
	slots  map[string]any  // as accepted (defaults filled); nil when not accepted
	calls  []hostCall      // the calls host assertions count
	all    []hostCall      // every call dispatched, answered or dropped
	evs    []capturedEvent // the turn's trace events, as appended
	inbox  inbox.Summary   // the session's inbox once the turn's jobs settled
	jobs   []jobs.Info     // the session's background jobs then
	// jobsBefore are the jobs when the turn started (expect_jobs' list
	// form counts those that became terminal during it).
	jobsBefore []jobs.Info
	terminal   bool // the session is in a terminal state after the turn
}

// wantsWorldBefore reports whether the turn (or a then: block) compares
// the world with the one it found.
func (ts *TurnSpec) wantsWorldBefore() bool {
	if ts.ExpectWorldUnchanged {
		return true
	}
	for _, b := range ts.Then {
		if b.ExpectWorldUnchanged {
			return true
		}
	}
	return false
}

// wantsJobs reports whether the turn (or a then: block) checks the inbox
// or the background jobs.
func (ts *TurnSpec) wantsJobs() bool {
	for _, b := range append([]*TurnSpec{ts}, ts.Then...) {
		if b.ExpectInbox != nil || b.ExpectJobs != nil {
			return true
		}
	}
	return false
}

// checkTurn runs one turn's assertions, then its then: blocks', and
// returns the failure messages.
func checkTurn(ts *TurnSpec, tv turnView) []string {
	var fails []string
	out := tv.out
	expectsError := ts.ExpectError != nil
	for _, b := range ts.Then {
		expectsError = expectsError || b.ExpectError != nil
	}
	switch {
	case out.Outcome == orchestrator.OutcomeRejected && !expectsError:
		fails = append(fails, rejectionText(out.Rejection))
	case out.Outcome == orchestrator.OutcomeError:
		fails = append(fails, fmt.Sprintf("unexpected turn error: %v", out.Err))
	}
	fails = append(fails, checkExpectations(ts, tv)...)
	for j, b := range ts.Then {
		for _, f := range checkExpectations(b, tv) {
			fails = append(fails, fmt.Sprintf("then[%d]: %s", j, f))
		}
	}
	return fails
}

// checkExpectations checks one block of expect_* keys against the turn.
func checkExpectations(ts *TurnSpec, tv turnView) []string {
	var fails []string
	out := tv.out
	fails = append(fails, checkExpectError(ts.ExpectError, out)...)
	fails = append(fails, checkEndState(ts, tv)...)
	if ts.ExpectWorld != nil {
		fails = append(fails, checkKeys("expect_world", ts.ExpectWorld, tv.world, true)...)
	}
	if ts.HasWorldFull {
		fails = append(fails, checkWorldFull(ts.ExpectWorldFull, tv.world)...)
	}
	if ts.ExpectSlots != nil {
		if tv.slots == nil {
			fails = append(fails, "expect_slots: the intent was not accepted, so it has no slots")
		} else {
			fails = append(fails, checkKeys("expect_slots", ts.ExpectSlots, tv.slots, false)...)
		}
	}
	if re := ts.ExpectViewMatches; re != nil && !re.MatchString(out.View) {
		fails = append(fails, fmt.Sprintf("expect_view_matches: view does not match /%s/: %q", re, clipValue(out.View)))
	}
	if ts.ExpectNoView && out.View != "" {
		fails = append(fails, fmt.Sprintf("expect_no_view: got view %q", clipValue(out.View)))
	}
	if ts.ExpectWorldUnchanged {
		before, after := orEmpty(tv.before), orEmpty(tv.world)
		if !jsonEqual(before, after) {
			fails = append(fails, worldDiff("expect_world_unchanged", before, after))
		}
	}
	fails = append(fails, checkHostCalls("expect_host_calls", ts.ExpectHostCalls, ts.ExpectNoHostCalls, tv.calls)...)
	fails = append(fails, checkNoHostCallsOf("expect_no_host_calls", ts.NoHostCallsOf, tv.all)...)
	fails = append(fails, checkInbox(ts.ExpectInbox, tv.inbox)...)
	fails = append(fails, checkJobs(ts.ExpectJobs, tv.jobs)...)
	fails = append(fails, checkJobList(ts.ExpectJobs, tv.jobsBefore, tv.jobs)...)
	fails = append(fails, checkEventsExact(ts.ExpectEventsExact, tv.evs)...)
	return append(fails, checkEvents(ts.ExpectEvents, tv.evs)...)
}

// checkExpectError checks expect_error against the turn's outcome: a
// rejection with the code, guard hint, missing slots and allowed intents it
// names. Nothing is checked without expect_error.
func checkExpectError(ee *ExpectError, out *orchestrator.Outcome) []string {
	if ee == nil {
		return nil
	}
	var fails []string
	switch {
	case out.Outcome != orchestrator.OutcomeRejected:
		fails = append(fails, fmt.Sprintf("expect_error: want code %s, got no rejection (the turn ended in %q)", ee.Code, out.State))
	case ee.Code != "" && out.Rejection.Code != ee.Code:
		fails = append(fails, fmt.Sprintf("expect_error: got code %s, want %s (%s)", out.Rejection.Code, ee.Code, out.Rejection.Message))
	}
	if out.Outcome == orchestrator.OutcomeRejected {
		if ee.GuardHint != "" && out.Rejection.GuardHint != ee.GuardHint {
			fails = append(fails, fmt.Sprintf("expect_error.guard_hint: got %q, want %q", out.Rejection.GuardHint, ee.GuardHint))
		}
		for _, want := range ee.MissingSlots {
			if !contains(out.Rejection.MissingSlots, want) {
				fails = append(fails, fmt.Sprintf("expect_error.missing_slots: %q is not among the missing slots [%s]",
					want, strings.Join(out.Rejection.MissingSlots, " ")))
			}
		}
		for _, want := range ee.AllowedContains {
			if !contains(out.Rejection.AllowedIntents, want) {
				fails = append(fails, fmt.Sprintf("expect_error.allowed_contains: %q is not among the allowed intents [%s]",
					want, strings.Join(out.Rejection.AllowedIntents, " ")))
			}
		}
	}
	return fails
}

// checkEndState checks where the turn ended against expect_terminal,
// expect_state, expect_not_state and expect_state_in.
func checkEndState(ts *TurnSpec, tv turnView) []string {
	var fails []string
	out := tv.out
	if ts.ExpectTerminal != nil && *ts.ExpectTerminal != tv.terminal {
		if tv.terminal {
			fails = append(fails, fmt.Sprintf("expect_terminal: false, but the turn ended in the terminal state %q", out.State))
		} else {
			fails = append(fails, fmt.Sprintf("expect_terminal: true, but the turn ended in %q, which is not terminal", out.State))
		}
	}
	if ts.HasExpectState && out.State != ts.ExpectState {
		fails = append(fails, fmt.Sprintf("expect_state: got %q, want %q", out.State, ts.ExpectState))
	}
	if ts.ExpectNotState != "" && out.State == ts.ExpectNotState {
		fails = append(fails, fmt.Sprintf("expect_not_state: got %q, which the turn must not end in", out.State))
	}
	if len(ts.ExpectStateIn) > 0 && !contains(ts.ExpectStateIn, out.State) {
		q := make([]string, len(ts.ExpectStateIn))
		for i, s := range ts.ExpectStateIn {
			q[i] = fmt.Sprintf("%q", s)
		}
		fails = append(fails, fmt.Sprintf("expect_state_in: got %q, want one of [%s]", out.State, strings.Join(q, ", ")))
	}
	return fails
}

// checkInbox compares expect_inbox with the inbox's unread notifications.
func checkInbox(e *InboxExpect, got inbox.Summary) []string {
	if e == nil {
		return nil
	}
	var fails []string
	if e.Unread != nil && *e.Unread != got.Unread {
		fails = append(fails, fmt.Sprintf("expect_inbox.unread: got %d unread notification(s) [%s], want %d", got.Unread, strings.Join(got.Severities, " "), *e.Unread))
	}
	if e.NeedsAttention != nil && *e.NeedsAttention != got.NeedsAttention {
		fails = append(fails, fmt.Sprintf("expect_inbox.needs_attention: got %d unread action_required notification(s), want %d", got.NeedsAttention, *e.NeedsAttention))
	}
	if e.HasSeverities {
		want := slices.Clone(e.Severities)
		slices.Sort(want)
		if !slices.Equal(want, got.Severities) {
			fails = append(fails, fmt.Sprintf("expect_inbox.severities: got [%s], want [%s] (the unread notifications' severities, sorted)",
				strings.Join(got.Severities, " "), strings.Join(want, " ")))
		}
	}
	return fails
}

// checkJobs compares expect_jobs with the session's background jobs.
func checkJobs(e *JobsExpect, got []jobs.Info) []string {
	if e == nil {
		return nil
	}
	var fails []string
	seen := make([]string, len(got))
	counts := map[string]int{}
	for i, j := range got {
		seen[i] = j.ID + " " + j.Handler + " " + string(j.Status)
		counts[string(j.Status)]++
	}
	list := strings.Join(seen, "; ")
	if list == "" {
		list = "none"
	}
	if e.Total != nil && *e.Total != len(got) {
		fails = append(fails, fmt.Sprintf("expect_jobs.total: got %d job(s) (%s), want %d", len(got), list, *e.Total))
	}
	for _, k := range jobStatuses {
		if want, ok := e.Counts[k]; ok && *want != counts[k] {
			fails = append(fails, fmt.Sprintf("expect_jobs.%s: got %d %s job(s) (%s), want %d", k, counts[k], k, list, *want))
		}
	}
	return fails
}

// checkJobList checks expect_jobs written as a list: the jobs that became
// terminal during the turn (unknown before it, or not terminal then), in
// start order; each entry takes the next of them with its namespace as
// handler, whose status must be the entry's. Jobs no entry names pass.
func checkJobList(e *JobsExpect, before, after []jobs.Info) []string {
	if e == nil || e.List == nil {
		return nil
	}
	was := map[string]jobs.Status{}
	for _, j := range before {
		was[j.ID] = j.Status
	}
	var ended []jobs.Info
	for _, j := range after {
		if !contains(terminalJobStatuses, string(j.Status)) {
			continue
		}
		if st, ok := was[j.ID]; ok && contains(terminalJobStatuses, string(st)) {
			continue
		}
		ended = append(ended, j)
	}
	slices.SortStableFunc(ended, func(a, b jobs.Info) int { return a.Started.Compare(b.Started) })
	var fails []string
	used := make([]bool, len(ended))
	for i, want := range e.List {
		k := -1
		for j := range ended {
			if !used[j] && ended[j].Handler == want.Namespace {
				k = j
				break
			}
		}
		if k < 0 {
			fails = append(fails, fmt.Sprintf("expect_jobs[%d]: no %s job ended this turn (%d job(s) ended: %s)", i, want.Namespace, len(ended), jobList(ended)))
			continue
		}
		used[k] = true
		if string(ended[k].Status) != want.Status {
			fails = append(fails, fmt.Sprintf("expect_jobs[%d]: the %s job %s ended %s, want %s%s", i, want.Namespace, ended[k].ID, ended[k].Status, want.Status, jobErr(ended[k])))
		}
	}
	return fails
}

func jobList(js []jobs.Info) string {
	if len(js) == 0 {
		return "none"
	}
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.Handler + " " + string(j.Status)
	}
	return strings.Join(out, ", ")
}

func jobErr(j jobs.Info) string {
	if j.Error != "" {
		return " (" + j.Error + ")"
	}
	return ""
}

// checkEventsExact checks expect_events_exact: the turn's events of the
// kinds the list names are exactly the list, in order.
func checkEventsExact(exps []EventExpect, evs []capturedEvent) []string {
	if exps == nil {
		return nil
	}
	kinds := map[string]bool{}
	for _, e := range exps {
		kinds[e.Kind] = true
	}
	var picked []capturedEvent
	for _, ev := range evs {
		if kinds[ev.Kind] {
			picked = append(picked, ev)
		}
	}
	if len(picked) != len(exps) {
		got := make([]string, len(picked))
		for i, ev := range picked {
			got[i] = ev.Kind
		}
		return []string{fmt.Sprintf("expect_events_exact: the turn has %d event(s) of the listed kinds [%s], want %d", len(picked), strings.Join(got, " "), len(exps))}
	}
	var fails []string
	for i, e := range exps {
		if f := checkEvents([]EventExpect{e}, picked[i:i+1]); f != nil {
			fails = append(fails, strings.Replace(f[0], "expect_events[0]", fmt.Sprintf("expect_events_exact[%d]", i), 1))
		}
	}
	return fails
}

// checkEvents finds the expect_events entries in order among a turn's
// events: each entry matches the first event after the previous entry's
// match that has its kind (and state_path) and whose payload includes its
// payload. The first entry not found fails, and the rest are not looked
// for, since their position depends on it.
func checkEvents(exps []EventExpect, evs []capturedEvent) []string {
	if len(exps) == 0 {
		return nil
	}
	payloads := make([]any, len(evs))
	for i, ev := range evs {
		payloads[i], _ = cassette.NormalizeJSON(ev.payload())
		if payloads[i] == nil {
			payloads[i] = map[string]any{}
		}
	}
	matches := func(e EventExpect, i int) bool {
		ev := evs[i]
		return ev.Kind == e.Kind && (!e.HasStatePath || ev.StatePath == e.StatePath) && (e.Payload == nil || subset(e.Payload, payloads[i]))
	}
	next := 0 // first event the next entry may match
	for i, e := range exps {
		found := -1
		for j := next; j < len(evs); j++ {
			if matches(e, j) {
				found = j
				break
			}
		}
		if found >= 0 {
			next = found + 1
			continue
		}
		return []string{eventMiss(i, e, evs, payloads, next, matches)}
	}
	return nil
}

// eventMiss explains an expect_events entry that was not found: what it
// wants, where it was looked for, and the turn's events of that kind (or
// the turn's kinds when it has none).
func eventMiss(i int, e EventExpect, evs []capturedEvent, payloads []any, from int, matches func(EventExpect, int) bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "expect_events[%d]: no %s event", i, e.Kind)
	if e.HasStatePath {
		fmt.Fprintf(&b, " in state %q", e.StatePath)
	}
	if e.Payload != nil {
		j, _ := json.Marshal(e.Payload)
		fmt.Fprintf(&b, " with payload including %s", cassette.ClipTo(string(j), 200))
	}
	if i > 0 {
		fmt.Fprintf(&b, " after expect_events[%d], which matched event %d", i-1, from-1)
		for j := 0; j < from; j++ {
			if matches(e, j) {
				fmt.Fprintf(&b, "; event %d matches but comes earlier (entries are matched in order)", j)
				break
			}
		}
	}
	var same []string
	for j, ev := range evs {
		if ev.Kind == e.Kind {
			p, _ := json.Marshal(payloads[j])
			at := ""
			if e.HasStatePath {
				at = fmt.Sprintf("in %q ", ev.StatePath)
			}
			same = append(same, fmt.Sprintf("%d: %s%s", j, at, cassette.ClipTo(string(p), 200)))
		}
	}
	if len(same) > 0 {
		fmt.Fprintf(&b, "; the turn's %s events: [%s]", e.Kind, strings.Join(same, ", "))
		return b.String()
	}
	kinds := make([]string, len(evs))
	for j, ev := range evs {
		kinds[j] = ev.Kind
	}
	fmt.Fprintf(&b, "; the turn has none (its events: [%s])", strings.Join(kinds, " "))
	return b.String()
}

// rejectionText is the failure line of a rejection no expect_error
// expected: its code, its message, and its guard hint when it has one
// ("unexpected rejection: code=C: message; hint=H").
func rejectionText(r *orchestrator.Rejection) string {
	var b strings.Builder
	fmt.Fprintf(&b, "unexpected rejection: code=%s", r.Code)
	if r.Message != "" {
		fmt.Fprintf(&b, ": %s", r.Message)
	}
	if r.GuardHint != "" {
		fmt.Fprintf(&b, "; hint=%s", r.GuardHint)
	}
	return b.String()
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// clipValue shortens a JSON value quoted in a message.
func clipValue(s string) string { return cassette.ClipTo(s, cassette.ValueClip) }
