package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// The tiers that resolve a free-text turn, as turn.routed records them.
const (
	TierExact         = "exact"
	TierSynonym       = "synonym"
	TierTemplate      = "template"
	TierContextual    = "contextual"
	TierDefaultIntent = "default_intent"
	TierFallback      = "free_form_fallback" // a default_intent the story's free-form fallback gave the state
	TierRouter        = "router"
	TierExtract       = "extract_llm" // routing.extract_llm_on_no_match's call
)

// Routing defaults.
const (
	DefaultRouter        = "agent.claude" // the router agent when neither --router nor routing.agent names one
	DefaultMinConfidence = 0.5            // the router answer's bar
	// RouteNone is the router's answer when no allowed intent fits.
	RouteNone = "none"
	// PurposeRoute is agent.call.start's purpose for a router call.
	PurposeRoute = "route"
	// PurposeExtractRoute is the purpose of the extraction tier's call.
	PurposeExtractRoute = "route_extract"
)

// CodeNoMatch is the rejection of free text no tier could route: the
// router said none or was below the confidence bar.
const CodeNoMatch = "NO_MATCH"

// CodeRouterFailed is the rejection of free text whose router call failed.
const CodeRouterFailed = "ROUTER_FAILED"

// RoutingConfig is how a run routes free text; its zero value leaves every
// choice to the story's routing: block and the defaults.
type RoutingConfig struct {
	// Semantic forces the synonym and template tiers on or off (the
	// --semantic-routing flag, KITSOKI_SEMANTIC_ROUTING); nil = the
	// story's routing.enabled, else off.
	Semantic *bool
	// Router is the router agent's alias (--router); "" = routing.agent,
	// else agent.claude.
	Router string
	// MinConfidence is the router's bar (--min-confidence); nil =
	// routing.min_confidence, else 0.5.
	MinConfidence *float64
	// SemanticDefault is whether the semantic tiers run when neither
	// Semantic nor the story's routing.enabled says: flows and the intents
	// test run them (Kitsoki's routing.enabled defaults to true there),
	// runs do not.
	SemanticDefault bool
	// Temperature, when set, is sent to the router and extraction agents
	// in the call's with-map (an intents fixture's temperature).
	Temperature *float64
	// Recording, when set, answers free text in place of the router
	// agent (kitsoki run --recording).
	Recording Recording
}

// WithRouting sets how free text is routed.
func WithRouting(c RoutingConfig) Option { return func(s *Session) { s.routing = c } }

// Route is how a free-text line was resolved.
type Route struct {
	Tier       string
	Intent     string // "" when nothing was confident enough
	Slots      map[string]any
	Confidence float64
	// Rejection says why no intent was chosen (Intent == "").
	Rejection *Rejection
	// Err is the router call's failure (a *agent.AskError for an agent's).
	Err error
	// Reason is why the contextual tier chose the intent: plan_affirmation,
	// plan_refine or room_request, or the class its classifier answered
	// (intent, help, meta_edit, room_request); "" for the other tiers.
	Reason string
	// Missing are the slots a partial template could not read.
	Missing []string `json:"-"`
	// Lane is the meta mode a help or meta_edit class opens (contextlanes.go).
	Lane string
}

// semantic reports whether the synonym and template tiers run.
func (s *Session) semantic() bool {
	if s.routing.Semantic != nil {
		return *s.routing.Semantic
	}
	if s.story.Routing.Enabled != nil {
		return *s.story.Routing.Enabled
	}
	return s.routing.SemanticDefault
}

// RouterAlias is the agent that routes free text in this session.
func (s *Session) RouterAlias() string {
	switch {
	case s.routing.Router != "":
		return s.routing.Router
	case s.story.Routing.Agent != "":
		return s.story.Routing.Agent
	}
	return DefaultRouter
}

// MinConfidence is the router answer's bar in this session.
func (s *Session) MinConfidence() float64 {
	switch {
	case s.routing.MinConfidence != nil:
		return *s.routing.MinConfidence
	case s.story.Routing.MinConfidence != nil:
		return *s.story.Routing.MinConfidence
	}
	return DefaultMinConfidence
}

// IsFreeText reports whether a line is free text rather than a typed
// intent. A typed line is "intent key=value …": it starts with a word that
// has no "=" and every later field is key=value, and either it names an
// intent the story knows or it has at least one slot. Anything else (a
// sentence, an apostrophe, an unknown lone word) is free text.
func (s *Session) IsFreeText(line string) bool {
	if s.over != nil || s.overlayFor(line) != nil {
		return true
	}
	fields, err := splitFields(line)
	if err != nil || len(fields) == 0 || strings.Contains(fields[0], "=") {
		return err != nil
	}
	for _, f := range fields[1:] {
		if k, _, ok := strings.Cut(f, "="); !ok || k == "" {
			return true
		}
	}
	if len(fields) > 1 {
		return false
	}
	return !slices.Contains(s.knownIntents(), fields[0])
}

// routable is the intents free text may resolve to in the current state:
// the allowed ones (arms here or in an ancestor) that are declared and not
// hidden, sorted.
func (s *Session) routable() []*story.Intent {
	var out []*story.Intent
	for _, name := range s.AllowedIntents() {
		if def := s.intentDef(name); def != nil && !def.Hidden {
			out = append(out, def)
		}
	}
	return out
}

// lexical runs the tiers that read the text alone: exact, verb-value,
// then (when enabled) the bare synonyms and examples and the templates,
// their verdicts banded by the semantic bars.
func (s *Session) lexical(text string, words []string, key string) (Route, bool) {
	intents := s.routable()
	if r, ok := slotsMatch(intents, text); ok {
		return r, true
	}
	if r, ok := exactMatch(intents, key); ok {
		return r, true
	}
	if r, ok := s.verbValueMatch(intents, text, true); ok {
		return r, true
	}
	if s.semantic() {
		if r, ok := s.synonymMatch(intents, text, words); ok {
			if r, ok := s.band(r); ok {
				return r, true
			}
		}
		if r, ok := templateMatch(intents, words); ok {
			if r, ok := s.band(r); ok {
				return r, true
			}
		}
	}
	return s.verbValueMatch(intents, text, false)
}

// sinks are the tiers after the model tiers: the turn cache, the state's
// default_intent (or the free-form fallback), then an exact match of an
// intent the state does not allow.
func (s *Session) sinks(text, key string) (Route, bool) {
	if s.semantic() {
		if r, ok := s.cacheLookup(text); ok {
			return r, true
		}
	}
	if st := s.defaultIntentState(); st != nil && st.DefaultSlot != "" {
		tier := TierDefaultIntent
		if st.Fallback != "" {
			tier = TierFallback
		}
		return Route{Tier: tier, Intent: st.DefaultIntent, Confidence: 1,
			Slots: map[string]any{st.DefaultSlot: strings.TrimSpace(text)}}, true
	}
	return s.outOfStateMatch(key)
}

// matchDeterministic runs the tiers that need no agent: the lexical ones,
// the state's contextual_routing, the turn cache, default_intent and the
// out-of-state match.
func (s *Session) matchDeterministic(text string) (Route, bool) {
	words := story.Words(text)
	key := strings.Join(words, " ")
	if key == "" {
		return Route{}, false
	}
	if r, ok := s.lexical(text, words, key); ok {
		return r, true
	}
	if r, ok := s.contextualRoute(text, words); ok {
		return r, true
	}
	return s.sinks(text, key)
}

// exactMatch: the words are an intent's name, its title, or one of its
// examples that no other allowed intent also lists.
func exactMatch(intents []*story.Intent, key string) (Route, bool) {
	norm := func(s string) string { return strings.Join(story.Words(s), " ") }
	for _, in := range intents {
		if norm(in.Name) == key || (in.Title != "" && norm(in.Title) == key) {
			return Route{Tier: TierExact, Intent: in.Name, Confidence: 1, Slots: map[string]any{}}, true
		}
	}
	var hit *story.Intent
	for _, in := range intents {
		if slices.ContainsFunc(in.Examples, func(e string) bool { return norm(e) == key }) {
			if hit != nil {
				return Route{}, false // an example two intents share is no exact match
			}
			hit = in
		}
	}
	if hit == nil {
		return Route{}, false
	}
	// An example of an intent with required slots must name them ("go
	// south"), else it is no exact match ("n": the next tiers read it).
	slots := valueSlots(hit, strings.Fields(key))
	if unfilledRequired(hit, slots) {
		return Route{}, false
	}
	return Route{Tier: TierExact, Intent: hit.Name, Confidence: 1, Slots: slots}, true
}

// valueSlots fills the intent's enum slots whose values (or their
// synonyms) the words hold, when all stand for one value.
func valueSlots(in *story.Intent, words []string) map[string]any {
	out := map[string]any{}
	for _, name := range in.SlotOrder {
		sl := in.Slots[name]
		if len(sl.Values) == 0 {
			continue
		}
		var found []any
		add := func(v any) {
			if !slices.ContainsFunc(found, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
				found = append(found, v)
			}
		}
		for _, v := range sl.Values {
			if containsAll(words, story.Words(fmt.Sprint(v))) {
				add(v)
			}
		}
		for _, syn := range sl.Synonyms {
			if containsAll(words, syn.Words) {
				add(syn.Value)
			}
		}
		if len(found) == 1 {
			out[name] = found[0]
		}
	}
	return out
}

// enumSlots fills the intent's slots that declare synonyms: when the
// words hold the slot's values or their synonyms, and all stand for one
// value, the slot gets that value. Slots without synonyms are left to the
// user to type.
func enumSlots(in *story.Intent, words []string) map[string]any {
	out := map[string]any{}
	for _, name := range in.SlotOrder {
		sl := in.Slots[name]
		if len(sl.Synonyms) == 0 {
			continue
		}
		var found []any
		add := func(v any) {
			if !slices.ContainsFunc(found, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
				found = append(found, v)
			}
		}
		for _, v := range sl.Values {
			if containsAll(words, story.Words(fmt.Sprint(v))) {
				add(v)
			}
		}
		for _, syn := range sl.Synonyms {
			if containsAll(words, syn.Words) {
				add(syn.Value)
			}
		}
		if len(found) == 1 {
			out[name] = found[0]
		}
	}
	return out
}

func containsAll(words, want []string) bool {
	if len(want) == 0 {
		return false
	}
	for _, w := range want {
		if !slices.Contains(words, w) {
			return false
		}
	}
	return true
}

// RouterSchema is the JSON Schema of the router's answer in the current
// state: one branch per routable intent, {intent, slots, confidence} with
// the intent's slots typed, and a "none" branch.
func (s *Session) RouterSchema() ([]byte, error) {
	var branches []any
	conf := map[string]any{"type": "number", "minimum": 0, "maximum": 1}
	for _, in := range s.routable() {
		props := map[string]any{}
		for _, name := range in.SlotOrder {
			props[name] = slotSchema(in.Slots[name])
		}
		branches = append(branches, map[string]any{
			"type": "object", "required": []string{"intent", "confidence"}, "additionalProperties": false,
			"properties": map[string]any{
				"intent":     map[string]any{"enum": []string{in.Name}},
				"slots":      map[string]any{"type": "object", "additionalProperties": false, "properties": props},
				"confidence": conf,
			},
		})
	}
	branches = append(branches, map[string]any{
		"type": "object", "required": []string{"intent", "confidence"}, "additionalProperties": false,
		"properties": map[string]any{
			"intent":     map[string]any{"enum": []string{RouteNone}},
			"slots":      map[string]any{"type": "object", "maxProperties": 0},
			"confidence": conf,
		},
	})
	return json.Marshal(map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "anyOf": branches})
}

// slotSchema types one slot for the router: its values as an enum, else
// its declared type.
func slotSchema(sl *story.Slot) map[string]any {
	out := map[string]any{}
	if sl.Description != "" {
		out["description"] = sl.Description
	}
	if len(sl.Values) > 0 {
		out["enum"] = sl.Values
		return out
	}
	switch sl.Type {
	case "int":
		out["type"] = "integer"
	case "float":
		out["type"] = "number"
	case "bool":
		out["type"] = "boolean"
	case "list":
		out["type"] = "array"
	default:
		out["type"] = "string"
	}
	return out
}

// RouterPrompt is the router's prompt: the state, each routable intent
// with its description, slots and examples, then the user's text.
func (s *Session) RouterPrompt(text string) string {
	var b strings.Builder
	if c := s.story.App.Context; c != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(c))
	}
	fmt.Fprintf(&b, "Route what the user typed to one of the intents allowed in state %q.\n", s.state)
	if st := s.focus(); st != nil && st.Description != "" {
		fmt.Fprintf(&b, "The state: %s\n", st.Description)
	}
	b.WriteString("\nIntents:\n")
	for _, in := range s.routable() {
		fmt.Fprintf(&b, "- %s", in.Name)
		if d := firstNonEmpty(in.Description, in.Title); d != "" {
			fmt.Fprintf(&b, ": %s", d)
		}
		b.WriteString("\n")
		for _, name := range in.SlotOrder {
			sl := in.Slots[name]
			typ := firstNonEmpty(sl.Type, "string")
			req := "optional"
			if sl.Required {
				req = "required"
			}
			fmt.Fprintf(&b, "    slot %s (%s, %s)", name, typ, req)
			if len(sl.Values) > 0 {
				fmt.Fprintf(&b, " one of %s", joinValues(sl.Values))
			}
			if sl.Description != "" {
				fmt.Fprintf(&b, ": %s", sl.Description)
			}
			if sl.FormatHint != "" {
				fmt.Fprintf(&b, " (format: %s)", sl.FormatHint)
			}
			if len(sl.Examples) > 0 {
				fmt.Fprintf(&b, " e.g. %s", strings.Join(sl.Examples, ", "))
			}
			b.WriteString("\n")
		}
		if len(in.Examples) > 0 {
			q := make([]string, len(in.Examples))
			for i, e := range in.Examples {
				q[i] = fmt.Sprintf("%q", e)
			}
			fmt.Fprintf(&b, "    examples: %s\n", strings.Join(q, ", "))
		}
	}
	fmt.Fprintf(&b, "- %s: nothing above fits\n", RouteNone)
	b.WriteString("\nAnswer with the intent, the slots the text fills (leave out those it does not), and your confidence from 0 to 1.\n\n")
	fmt.Fprintf(&b, "User: %s\n", text)
	return b.String()
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}

// routerSchema compiles the router schema raw of the current state once
// per session: a state's schema changes only with the intents its guards
// allow, so a session meets few, and each is compiled the first time.
func (s *Session) routerSchema(raw []byte) (*schema.Schema, error) {
	key := s.state + "\x00" + string(raw)
	if sch, ok := s.routerSchemas[key]; ok {
		return sch, nil
	}
	sch, err := schema.CompileDocument("router schema of state "+s.state, raw)
	if err != nil {
		return nil, err
	}
	if s.routerSchemas == nil {
		s.routerSchemas = map[string]*schema.Schema{}
	}
	s.routerSchemas[key] = sch
	return sch, nil
}

// askRouter asks the router agent with a decide through the host.
func (s *Session) askRouter(ctx context.Context, t *turnCtx, text string) Route {
	return s.askAgent(ctx, t, text, modelCall{alias: s.RouterAlias(), verb: "decide", tier: TierRouter, purpose: PurposeRoute})
}

// modelCall says which agent a model tier asks, and how.
type modelCall struct {
	alias, verb, tier, purpose string
}

// askAgent asks an agent, through the host, to route the text: the
// router prompt and schema, answered with {intent, slots, confidence}.
func (s *Session) askAgent(ctx context.Context, t *turnCtx, text string, mc modelCall) Route {
	raw, err := s.RouterSchema()
	if err != nil {
		return Route{Tier: mc.tier, Err: fmt.Errorf("router schema: %w", err)}
	}
	sch, err := s.routerSchema(raw)
	if err != nil {
		return Route{Tier: mc.tier, Err: fmt.Errorf("router schema: %w", err)}
	}
	inv := &story.Invoke{Name: host.AgentNamespace + mc.verb}
	if mc.alias != DefaultRouter {
		inv.Agent = mc.alias // agent.claude is the built-in path, as for an invoke without agent:
	}
	args := map[string]any{"prompt": s.RouterPrompt(text), "call": mc.purpose}
	if s.routing.Temperature != nil {
		args["temperature"] = *s.routing.Temperature
	}
	world := s.lendWorld()
	res, err := s.host.Dispatch(ctx, &host.Call{Namespace: inv.Name, Args: args, Invoke: inv,
		SessionID: s.id, Turn: t.n, State: s.state, TurnState: t.start, World: world, Schema: sch, Purpose: mc.purpose,
		Run: host.RunEnv{Live: s.liveFor(world), TitleOwned: s.TitleOwned()}})
	if err != nil {
		return Route{Tier: mc.tier, Err: err}
	}
	if res == nil {
		return Route{Tier: mc.tier, Err: fmt.Errorf("the agent %s gave no answer", mc.alias)}
	}
	if res.Err != nil {
		return Route{Tier: mc.tier, Err: res.Err}
	}
	sub, _ := res.Data["submitted"].(map[string]any)
	r := Route{Tier: mc.tier, Slots: map[string]any{}}
	r.Intent, _ = sub["intent"].(string)
	r.Confidence, _ = number.Float(sub["confidence"])
	if m, ok := sub["slots"].(map[string]any); ok {
		for k, v := range m {
			r.Slots[k] = normalizeNumber(v)
		}
	}
	return r
}

// extractRoute is routing.extract_llm_on_no_match: the extraction agent
// (routing.extract_llm_agent) is asked to route the text, and its answer
// is banded like a semantic verdict. A failure, a none or a weak answer
// is no match: the router is asked next (the call's failure is in the
// trace's agent.call events).
func (s *Session) extractRoute(ctx context.Context, t *turnCtx, text string) (Route, bool, error) {
	rt := s.story.Routing
	if !rt.ExtractLLMOnNoMatch || t == nil {
		return Route{}, false, nil
	}
	r := s.askAgent(ctx, t, text, modelCall{alias: rt.ExtractLLMAgent, verb: "extract", tier: TierExtract, purpose: PurposeExtractRoute})
	if r.Err != nil {
		if isTraceErr(r.Err) {
			return r, false, r.Err
		}
		return Route{}, false, nil
	}
	if r.Intent == "" || r.Intent == RouteNone {
		return Route{}, false, nil
	}
	if br, ok := s.band(r); ok {
		if br.Rejection == nil {
			s.cacheStore(text, br)
		}
		return br, true, nil
	}
	return Route{}, false, nil
}

// normalizeNumber turns an integral json.Number into int64 and any other
// into float64, as typed input has them.
func normalizeNumber(v any) any {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i
		}
		f, _ := n.Float64()
		return f
	}
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return v
}

// Resolve runs the tiers on a free-text line without taking a turn or
// calling the router: the deterministic result, if any. Benchmarks and
// the intents test use it.
func (s *Session) Resolve(text string) (Route, bool) {
	r, ok := s.matchDeterministic(text)
	if ok && r.Reason == reasonClassify {
		return Route{}, false // the classifier is an agent call
	}
	return r, ok
}

// route resolves free text: the lexical tiers, the contextual tier (in a
// room with contextual lanes, the classifier), the extraction call (when
// the story asks for it), the turn cache, default_intent, the out-of-state
// match, then the router (or the recording the run replays).
func (s *Session) route(ctx context.Context, t *turnCtx, text string) Route {
	r, done, asked := s.routeTiers(ctx, t, text)
	if done {
		return r
	}
	if !asked {
		if s.routing.Recording != nil {
			return s.recordedRoute(text)
		}
		r = s.askRouter(ctx, t, text)
	}
	return s.judgeRouted(text, r)
}

// routeTiers runs the tiers before the router: done when one answered;
// asked when the classifier answered for the router (r is its answer).
func (s *Session) routeTiers(ctx context.Context, t *turnCtx, text string) (r Route, done, asked bool) {
	words := story.Words(text)
	key := strings.Join(words, " ")
	if key == "" {
		return Route{}, false, false
	}
	if r, ok := s.lexical(text, words, key); ok {
		return r, true, false
	}
	if r, ok := s.embeddingRoute(ctx, text, words); ok {
		return r, true, false
	}
	if c, ok := s.contextualRoute(text, words); ok {
		if c.Reason != reasonClassify {
			return c, true, false
		}
		r = s.classify(ctx, t, s.contextualState(), text)
		return r, r.Lane != "", true
	}
	if r, ok, err := s.extractRoute(ctx, t, text); err != nil || ok {
		return r, true, false
	}
	if r, ok := s.sinks(text, key); ok {
		return r, true, false
	}
	return Route{}, false, false
}

// judgeRouted turns the router's (or the classifier's) answer into a
// route or a rejection, and caches a confident one.
func (s *Session) judgeRouted(text string, r Route) Route {
	allowed := make([]string, 0)
	for _, in := range s.routable() {
		allowed = append(allowed, in.Name)
	}
	switch {
	case r.Err != nil:
		r.Rejection = &Rejection{Code: CodeRouterFailed, AllowedIntents: allowed, Message: s.routerFailed(text, r.Err)}
	case r.Intent == RouteNone || r.Intent == "":
		r.Intent = ""
		r.Rejection = &Rejection{Code: CodeNoMatch, AllowedIntents: allowed,
			Message: fmt.Sprintf("could not tell what %q means here; rephrase, or type one of: %s", text, strings.Join(allowed, ", "))}
	case r.Confidence < s.MinConfidence():
		r.Rejection = &Rejection{Code: CodeNoMatch, AllowedIntents: allowed, Candidates: []string{r.Intent},
			Message: fmt.Sprintf("not sure what %q means here (maybe %s, confidence %.2f < %.2f); rephrase, or type one of: %s",
				text, r.Intent, r.Confidence, s.MinConfidence(), strings.Join(allowed, ", "))}
		r.Intent = ""
	default:
		s.cacheStore(text, r)
	}
	return r
}

// routerFailed says why the router call for text failed. When the router
// agent's program is not installed, it says so in one line: which agent,
// how to install it, and how to type the intent instead.
func (s *Session) routerFailed(text string, err error) string {
	if ni, ok := errors.AsType[*agent.NotInstalled](err); ok {
		how := "install it"
		switch {
		case ni.Install != "" && ni.Docs != "":
			how = fmt.Sprintf("install it (%s; see %s)", ni.Install, ni.Docs)
		case ni.Install != "":
			how = fmt.Sprintf("install it (%s)", ni.Install)
		}
		return fmt.Sprintf("%q needs the router agent %s, whose program %s is not installed: %s, or type the intent instead: %s",
			text, s.RouterAlias(), ni.Program, how, strings.Join(typedForms(s.routable()), ", "))
	}
	msg := err.Error()
	if ae, ok := errors.AsType[*agent.AskError](err); ok {
		msg = ae.Error()
	}
	return fmt.Sprintf("the router agent %s could not route %q: %s", s.RouterAlias(), text, msg)
}

// typedForms is how each intent is typed: its first example that is a
// typed line naming its required slots ("greet name=Ada"), else its name
// and each required slot as slot=<slot>.
func typedForms(intents []*story.Intent) []string {
	out := make([]string, 0, len(intents))
	for _, in := range intents {
		out = append(out, typedForm(in))
	}
	return out
}

func typedForm(in *story.Intent) string {
	var req []string
	for _, n := range in.SlotOrder {
		if in.Slots[n].Required {
			req = append(req, n)
		}
	}
	for _, ex := range in.Examples {
		fields, err := splitFields(ex)
		if err != nil || len(fields) == 0 || fields[0] != in.Name {
			continue
		}
		has := map[string]bool{}
		for _, f := range fields[1:] {
			if k, _, ok := strings.Cut(f, "="); ok {
				has[k] = true
			}
		}
		if !slices.ContainsFunc(req, func(n string) bool { return !has[n] }) {
			return ex
		}
	}
	form := in.Name
	for _, n := range req {
		form += fmt.Sprintf(" %s=<%s>", n, n)
	}
	return form
}

// Recording answers free text from a recording instead of a router agent:
// (state, input) → intent and slots (Kitsoki's kind: recording files).
type Recording interface {
	Lookup(state, input string) (intent string, slots map[string]any, ok bool)
	Name() string // the file, for messages
}

// TierRecording is the tier a replayed recording answers in.
const TierRecording = "recording"

// recordedRoute answers from the run's recording; an input it has no
// entry for is UNKNOWN_INTENT, as Kitsoki's replay harness answers.
func (s *Session) recordedRoute(text string) Route {
	rec := s.routing.Recording
	name, slots, ok := rec.Lookup(s.state, strings.TrimSpace(text))
	if !ok {
		allowed := s.AllowedIntents()
		return Route{Tier: TierRecording, Rejection: &Rejection{Code: CodeUnknownIntent, AllowedIntents: allowed,
			Message: fmt.Sprintf("input %q in state %q has no entry in the recording %s; add one (state, input, intent: {name, slots}), or type one of: %s",
				text, s.state, rec.Name(), strings.Join(allowed, ", "))}}
	}
	out := make(map[string]any, len(slots))
	for k, v := range slots {
		out[k] = v
	}
	return Route{Tier: TierRecording, Intent: name, Slots: out, Confidence: 1}
}

// Say takes one free-text turn: the line is routed (turn.routed says by
// which tier) and the intent it resolved to is taken like a typed one,
// with the same validation. Free text that nothing routes is rejected
// (NO_MATCH, or ROUTER_FAILED when the router call failed, whose failure
// is also in the outcome's HostErrors).
func (s *Session) Say(ctx context.Context, text string) (*Outcome, error) {
	if !s.started {
		return nil, fmt.Errorf("session not started: call Start first")
	}
	if len(s.timers) > 0 {
		if _, err := s.Tick(ctx); err != nil {
			return nil, err
		}
	}
	s.turn++
	t := s.newTurn(s.turn, "", nil)
	if err := s.emit(t, trace.TurnInput{Input: text}); err != nil {
		return nil, err
	}
	if err := s.emit(t, trace.TurnStart{Turn: t.n, Input: text}); err != nil {
		return nil, err
	}
	if err := s.beginTurnWorld(ctx, t); err != nil {
		return nil, err
	}
	if s.over != nil || s.story.OffPath != nil || s.story.MetaModes != nil {
		if out, ok, err := s.sayOverlay(ctx, t, text); ok {
			return out, err
		}
	}
	r := s.route(ctx, t, text)
	if r.Err != nil && isTraceErr(r.Err) {
		return nil, r.Err
	}
	routed := trace.TurnRouted{Tier: r.Tier, Reason: r.Reason, Input: text, Intent: r.Intent, Confidence: r.Confidence}
	if r.Intent != "" {
		routed.Slots = r.Slots
	}
	if err := s.emit(t, routed); err != nil {
		return nil, err
	}
	if r.Lane != "" {
		return s.openLane(ctx, t, r, text)
	}
	if r.Rejection != nil && r.Rejection.Code == CodeNoMatch {
		if st := s.offRampState(); st != nil {
			out, err := s.offRamp(ctx, t, st.OffRamp, text)
			if out != nil {
				out.Route = &r
			}
			return out, err
		}
	}
	if r.Rejection != nil {
		out, err := s.reject(t, r.Rejection)
		if out != nil && r.Err != nil {
			out.HostErrors = append(out.HostErrors, fmt.Errorf("router %s: %w", s.RouterAlias(), r.Err))
		}
		if out != nil {
			out.Route = &r
		}
		return out, err
	}
	t.intent, t.slots = r.Intent, copySlots(r.Slots)
	out, err := s.takeTurn(ctx, t)
	if out != nil {
		out.Route = &r
	}
	return out, err
}

// RouteIn routes free text as if the session were in state, without
// taking a turn or entering the state: the tiers, then the router (whose
// agent.call.* and the turn.routed event are traced under turn n). The
// intents test uses it; the session's own state is left as it was.
func (s *Session) RouteIn(ctx context.Context, n int64, state, text string) (Route, error) {
	if s.story.States[state] == nil {
		return Route{}, fmt.Errorf("state %q is not declared%s", state, suggestQuoted(state, sortedKeys(s.story.States)))
	}
	prev := s.state
	s.state = state
	defer func() { s.state = prev }()
	t := s.newTurn(n, "", nil)
	r := s.route(ctx, t, text)
	if r.Err != nil && isTraceErr(r.Err) {
		return r, r.Err
	}
	routed := trace.TurnRouted{Tier: r.Tier, Reason: r.Reason, Input: text, Intent: r.Intent, Confidence: r.Confidence}
	if r.Intent != "" {
		routed.Slots = r.Slots
	}
	if err := s.emit(t, routed); err != nil {
		return r, err
	}
	return r, s.sink.EndTurn()
}

func suggestQuoted(word string, cands []string) string {
	if sug := suggest(word, cands); sug != "" {
		return fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return ""
}

// CheckIn validates an intent as if the session were in state (Check),
// leaving the session's state as it was. The intents test uses it.
func (s *Session) CheckIn(state, intent string, slots map[string]any) *Rejection {
	prev := s.state
	s.state = state
	defer func() { s.state = prev }()
	return s.Check(intent, slots)
}

// SetRouterTemperature sets the temperature sent to the router and
// extraction agents (nil: none).
func (s *Session) SetRouterTemperature(t *float64) { s.routing.Temperature = t }
