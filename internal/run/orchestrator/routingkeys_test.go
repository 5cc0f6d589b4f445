package orchestrator

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// routingKeysStory is a story whose routing: block the tests below rewrite.
const routingKeysStory = `
app: {id: keys}
routing: {agent: agent.router ROUTING}
agent_plugins:
  agent.router: {plugin: builtin.inprocess}
  agent.small: {plugin: builtin.inprocess}
intents:
  ford:
    examples: ["ford the river"]
    synonyms: ["wade"]
  rest:
    synonyms: ["camp", "wade camp"]
  buy:
    synonyms: ["buy {item}"]
    slots:
      item: {type: enum, values: [oxen, food], required: true}
  hunt: {}
  read: {examples: ["read the sign"]}
root: trail
states:
  trail:
    on:
      ford: [{target: .}]
      rest: [{target: .}]
      buy: [{target: .}]
      hunt: [{target: .}]
  fort:
    on:
      read: [{target: .}]
      "*": [{target: .}]
`

func keysRig(t *testing.T, routing string, opts ...rigOpt) *rig {
	t.Helper()
	return newRig(t, files{"app.yaml": strings.Replace(routingKeysStory, " ROUTING", routing, 1)}, opts...)
}

func TestSemanticBarsBandVerdicts(t *testing.T) {
	tests := []struct {
		name, routing, text string
		want                Route
		ok                  bool
	}{
		{"synonym above the default high bar", "", "let's wade across", Route{Tier: TierSynonym, Intent: "ford", Confidence: 0.9, Slots: map[string]any{}}, true},
		{"example as a bare phrase", "", "ford the river now", Route{Tier: TierSynonym, Intent: "ford", Confidence: 0.9, Slots: map[string]any{}}, true},
		{"a high bar above the synonym asks to confirm", ", semantic_high_bar: 0.95", "let's wade across",
			Route{Tier: TierSynonym, Confidence: 0.9, Slots: map[string]any{}, Rejection: &Rejection{Code: CodeClarify, Candidates: []string{"ford"},
				Message: "did you mean ford (confidence 0.90)? type it to confirm"}}, true},
		{"a mid bar above the verdict is no match", ", semantic_high_bar: 0.99, semantic_mid_bar: 0.95", "let's wade across", Route{}, false},
		{"partial template between the bars", "", "buy a wagon",
			Route{Tier: TierTemplate, Confidence: 0.65, Slots: map[string]any{}, Missing: []string{"item"},
				Rejection: &Rejection{Code: CodeMissingSlots, Candidates: []string{"buy"}, MissingSlots: []string{"item"}, Message: "buy needs item; type it with the slot filled (e.g. buy item=…)"}}, true},
		{"partial template below the mid bar", ", semantic_mid_bar: 0.7", "buy a wagon", Route{}, false},
		{"two intents tie", "", "tired, camp or wade",
			Route{Tier: TierSynonym, Confidence: 0.5, Rejection: &Rejection{Code: CodeAmbiguousIntent, Candidates: []string{"ford", "rest"},
				AllowedIntents: []string{"ford", "rest"}, Message: `"tired, camp or wade" could mean ford or rest; type one of them`}}, true},
		{"the leading verb breaks a tie", "", "camp and wade", Route{Tier: TierSynonym, Intent: "rest", Confidence: 0.9, Slots: map[string]any{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := keysRig(t, ", enabled: true"+tt.routing)
			got, ok := r.sess.Resolve(tt.text)
			if ok != tt.ok {
				t.Fatalf("Resolve(%q) ok = %v, want %v (%+v)", tt.text, ok, tt.ok, got)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tt.text, d)
			}
		})
	}
}

func TestStopwordsExtra(t *testing.T) {
	long := "wade yall please the river bank mud rocks stones sand"
	r := keysRig(t, ", enabled: true")
	if _, ok := r.sess.Resolve(long); ok {
		t.Errorf("a synonym leaving 7 content words uncovered must not match")
	}
	if got := r.sess.Signature("Let's wade the river, y'all"); got != "river wade y'all" {
		t.Errorf("signature = %q", got)
	}
	r = keysRig(t, ", enabled: true, stopwords_extra: [Yall, mud, y'all]")
	if got, ok := r.sess.Resolve(long); !ok || got.Intent != "ford" {
		t.Errorf("with stopwords_extra: Resolve = %+v, %v; want ford", got, ok)
	}
	if got := r.sess.Signature("Let's wade the river, y'all"); got != "river wade" {
		t.Errorf("signature with stopwords_extra = %q", got)
	}
}

func TestTurnCache(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	ra := &routerAgent{sub: `{"intent":"hunt","confidence":0.6}`}
	r := keysRig(t, ", enabled: true, cache_enabled: true, cache_max_age: 1h, confidence_decay: true, cache_cap: 2, revalidate_strikes: 2",
		withAgent("agent.router", ra), withClock(clk))
	say := func(text string) *Outcome {
		t.Helper()
		out, err := r.sess.Say(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := say("go shoot some deer"); out.Route.Tier != TierRouter || out.Route.Intent != "hunt" {
		t.Fatalf("first time: %+v", out.Route)
	}
	// Another phrasing with the same content words is the same row.
	if out := say("shoot deer, go!"); out.Route.Tier != TierCache || out.Route.Intent != "hunt" || len(ra.calls) != 1 {
		t.Fatalf("second time: %+v after %d router calls", out.Route, len(ra.calls))
	}
	// Confidence 0.6 with confidence_decay: the row lives 30 minutes.
	clk.Advance(31 * time.Minute)
	if out := say("go shoot some deer"); out.Route.Tier != TierRouter || len(ra.calls) != 2 {
		t.Fatalf("after the row expired: %+v", out.Route)
	}
	if r.sess.cache.Len() != 1 {
		t.Errorf("rows = %d, want 1", r.sess.cache.Len())
	}
	say("gather berries")
	say("look for tracks")
	if n := r.sess.cache.Len(); n > 2 {
		t.Errorf("rows = %d, want at most cache_cap 2", n)
	}
}

func TestTurnCacheRevalidateStrikes(t *testing.T) {
	r := keysRig(t, ", cache_enabled: true, revalidate_strikes: 2")
	text := "what does that say"
	key := cacheKey("trail", r.sess.Signature(text))
	// A row whose intent the state no longer takes is refused: a strike.
	r.sess.cache.put(key, Route{Intent: "read", Confidence: 0.9}, r.sess.clock.Now())
	for i := 0; i < 2; i++ {
		if _, ok := r.sess.cacheLookup(text); ok {
			t.Fatalf("lookup %d: a refused row must not answer", i)
		}
	}
	if r.sess.cache.rows[key] != nil {
		t.Errorf("the row must be dropped after 2 strikes")
	}
	r.sess.cache.put(key, Route{Intent: "hunt", Confidence: 0.9}, r.sess.clock.Now())
	if got, ok := r.sess.cacheLookup(text); !ok || got.Tier != TierCache || got.Intent != "hunt" {
		t.Errorf("a row the state takes: %+v, %v", got, ok)
	}
}

func TestExtractLLMOnNoMatch(t *testing.T) {
	small := &routerAgent{sub: `{"intent":"hunt","confidence":0.85}`}
	ra := &routerAgent{sub: `{"intent":"rest","confidence":0.9}`}
	r := keysRig(t, ", extract_llm_on_no_match: true, extract_llm_agent: agent.small", withAgent("agent.router", ra), withAgent("agent.small", small))
	out, err := r.sess.Say(context.Background(), "track some game")
	if err != nil {
		t.Fatal(err)
	}
	if out.Route.Tier != TierExtract || out.Route.Intent != "hunt" || len(small.calls) != 1 || len(ra.calls) != 0 {
		t.Fatalf("route %+v; small %d calls, router %d", out.Route, len(small.calls), len(ra.calls))
	}
	if c := small.calls[0]; c.Request.Verb != "extract" || c.Request.With["call"] != PurposeExtractRoute {
		t.Errorf("extraction call: verb %q, with %v", c.Request.Verb, c.Request.With)
	}
	// A weak extraction answer falls through to the router.
	small.sub = `{"intent":"hunt","confidence":0.3}`
	if out, _ := r.sess.Say(context.Background(), "maybe nap a while"); out.Route.Tier != TierRouter || out.Route.Intent != "rest" {
		t.Errorf("weak answer: %+v", out.Route)
	}
}

func TestExtractLLMAgentMustBeDeclared(t *testing.T) {
	src := strings.Replace(routingKeysStory, " ROUTING", ", extract_llm_on_no_match: true", 1)
	err := loadStoryErr(t, src)
	want := `routing.extract_llm_agent: routing.extract_llm_agent "agent.local" is not declared in agent_plugins (declared: agent.claude, agent.router, agent.small)`
	if !strings.Contains(err, want) {
		t.Errorf("error %s\nwant it to hold %s", err, want)
	}
}

func TestOutOfStateExactMatch(t *testing.T) {
	r := keysRig(t, "")
	got, ok := r.sess.Resolve("read the sign")
	want := Route{Tier: TierExact, Confidence: 1, Slots: map[string]any{}, Rejection: &Rejection{Code: CodeIntentNotAllowed,
		AllowedIntents: []string{"buy", "ford", "hunt", "rest"}, Candidates: []string{"read"},
		Message: `read is not available in state "trail"; type one of: buy, ford, hunt, rest`}}
	if !ok {
		t.Fatal("no match")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// Under a "*" arm the wildcard takes it.
	r = keysRig(t, "", withRoot("fort"))
	if got, ok := r.sess.Resolve("hunt"); !ok || got.Intent != "hunt" || got.Rejection != nil {
		t.Errorf("wildcard state: %+v, %v", got, ok)
	}
}

func TestVerbValueCloakStyle(t *testing.T) {
	src := `
app: {id: cloakish}
intents:
  go:
    title: Go
    examples: ["go south", "head north", "walk east", "n"]
    slots:
      direction: {type: enum, values: [north, south, east, west], required: true}
  greet:
    slots:
      name: {type: string, required: true}
root: foyer
states:
  foyer:
    on:
      go: [{target: .}]
      greet: [{target: .}]
`
	for _, tt := range []struct {
		text string
		want Route
	}{
		{"go west", Route{Tier: TierVerbValue, Intent: "go", Confidence: 1, Slots: map[string]any{"direction": "west"}}},
		{"Head West", Route{Tier: TierVerbValue, Intent: "go", Confidence: 1, Slots: map[string]any{"direction": "west"}}},
		{"walk south", Route{Tier: TierVerbValue, Intent: "go", Confidence: 1, Slots: map[string]any{"direction": "south"}}},
		{"greet Ada", Route{Tier: TierVerbValue, Intent: "greet", Confidence: 1, Slots: map[string]any{"name": "Ada"}}},
	} {
		r := newRig(t, files{"app.yaml": src})
		got, ok := r.sess.Resolve(tt.text)
		if !ok {
			t.Errorf("Resolve(%q): no match", tt.text)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Resolve(%q) (-want +got):\n%s", tt.text, d)
		}
	}
	r := newRig(t, files{"app.yaml": src})
	if _, ok := r.sess.Resolve("head to the cloakroom"); ok {
		t.Errorf("a verb followed by no value must not route")
	}
	if out := r.do("greet name=Ada"); out.Rejection != nil {
		t.Errorf("typed: %v", out.Rejection)
	}
}

// loadStoryErr loads src and returns its load error's text.
func loadStoryErr(t *testing.T, src string) string {
	t.Helper()
	_, err := story.Load(writeStory(t, files{"app.yaml": src}), story.WithStubbedHosts())
	if err == nil {
		t.Fatal("the story loaded")
	}
	return err.Error()
}

// fakeRanker scores documents by the words of the query they hold.
type fakeRanker struct{ scores map[string]float64 }

func (f fakeRanker) Rank(_ context.Context, _ string, docs []string) ([]Scored, error) {
	var out []Scored
	for i, d := range docs {
		name := strings.SplitN(d, ".", 2)[0]
		out = append(out, Scored{Index: i, Score: f.scores[name]})
	}
	slices.SortStableFunc(out, func(a, b Scored) int {
		if a.Score > b.Score {
			return -1
		}
		if a.Score < b.Score {
			return 1
		}
		return 0
	})
	return out, nil
}

func TestEmbeddingTier(t *testing.T) {
	ra := &routerAgent{sub: `{"intent":"rest","confidence":0.9}`}
	routing := ", enabled: true, embedding: {endpoint: \"http://127.0.0.1:1\", confident_bar: 0.8, margin: 0.1}"
	for _, tt := range []struct {
		name   string
		scores map[string]float64
		tier   string
		intent string
		code   string
	}{
		{"confident", map[string]float64{"hunt": 0.91, "ford": 0.5}, TierEmbedding, "hunt", ""},
		{"too close to call", map[string]float64{"hunt": 0.91, "ford": 0.85}, TierEmbedding, "", CodeAmbiguousIntent},
		{"below the bar: the router", map[string]float64{"hunt": 0.7}, TierRouter, "rest", ""},
		// 0.82 passes confident_bar but not the semantic high bar (0.9):
		// the user is asked to confirm.
		{"between the semantic bars", map[string]float64{"hunt": 0.82}, TierEmbedding, "", CodeClarify},
	} {
		t.Run(tt.name, func(t *testing.T) {
			extra := routing
			if tt.code == CodeClarify {
				extra += ", semantic_high_bar: 0.9"
			}
			r := keysRig(t, extra, withAgent("agent.router", ra))
			r.sess.ranker = fakeRanker{tt.scores}
			out, err := r.sess.Say(context.Background(), "track some game")
			if err != nil {
				t.Fatal(err)
			}
			got := out.Route
			if got.Tier != tt.tier || got.Intent != tt.intent || (tt.code != "" && (got.Rejection == nil || got.Rejection.Code != tt.code)) {
				t.Errorf("route %+v", got)
			}
		})
	}
}

func TestRouterTemperature(t *testing.T) {
	ra := &routerAgent{sub: `{"intent":"hunt","confidence":0.9}`}
	r := keysRig(t, "", withAgent("agent.router", ra))
	temp := 0.2
	r.sess.SetRouterTemperature(&temp)
	if _, err := r.sess.Say(context.Background(), "track some game"); err != nil {
		t.Fatal(err)
	}
	if got := ra.calls[0].Request.With["temperature"]; got != 0.2 {
		t.Errorf("with.temperature = %v, want 0.2", got)
	}
}

// A typed line said as free text ("greet name=Ada") fills its slots,
// typed by their declarations, instead of reading "name=Ada" as a value.
func TestSlotsSaidAsFreeText(t *testing.T) {
	src := `
app: {id: slotsaid}
intents:
  greet:
    title: Say hello
    slots:
      name: {type: string, required: true}
      style: {type: enum, values: [casual, formal], default: casual}
  order_tea:
    slots:
      cups: {type: int, required: true}
root: lobby
states:
  lobby:
    on:
      greet: [{target: .}]
      order_tea: [{target: .}]
`
	for _, tt := range []struct {
		text string
		want *Route // nil: no deterministic reading
	}{
		{"greet name=Ada", &Route{Tier: TierVerbValue, Intent: "greet", Confidence: 1, Slots: map[string]any{"name": "Ada"}}},
		{"greet name='Ada Lovelace' style=formal", &Route{Tier: TierVerbValue, Intent: "greet", Confidence: 1, Slots: map[string]any{"name": "Ada Lovelace", "style": "formal"}}},
		{"Say hello name=Grace", &Route{Tier: TierVerbValue, Intent: "greet", Confidence: 1, Slots: map[string]any{"name": "Grace"}}},
		{"order tea cups=2", &Route{Tier: TierVerbValue, Intent: "order_tea", Confidence: 1, Slots: map[string]any{"cups": int64(2)}}},
		{"order_tea cups=2", &Route{Tier: TierVerbValue, Intent: "order_tea", Confidence: 1, Slots: map[string]any{"cups": int64(2)}}},
		{"greet Ada", &Route{Tier: TierVerbValue, Intent: "greet", Confidence: 1, Slots: map[string]any{"name": "Ada"}}},
		// A key the intent does not have is kept: the turn refuses it.
		{"greet nmae=Ada", &Route{Tier: TierVerbValue, Intent: "greet", Confidence: 1, Slots: map[string]any{"nmae": "Ada"}}},
		{"wave name=Ada", nil},
	} {
		r := newRig(t, files{"app.yaml": src})
		got, ok := r.sess.Resolve(tt.text)
		switch {
		case tt.want == nil && ok:
			t.Errorf("Resolve(%q) = %+v, want no match", tt.text, got)
		case tt.want != nil && !ok:
			t.Errorf("Resolve(%q): no match", tt.text)
		case tt.want != nil:
			if d := cmp.Diff(*tt.want, got); d != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tt.text, d)
			}
		}
	}
	r := newRig(t, files{"app.yaml": src})
	out, err := r.sess.Say(context.Background(), "greet nmae=Ada")
	if err != nil {
		t.Fatal(err)
	}
	if out.Rejection == nil || out.Rejection.Code != "UNKNOWN_SLOT" || !strings.Contains(out.Rejection.Message, `did you mean "name"?`) {
		t.Errorf("an unknown slot said: %+v", out.Rejection)
	}
}

// cache_trim_fraction is the share of cache_cap dropped, coldest first,
// when a write passes the cap (at least one row); cache_max_age is a
// row's whole life without confidence_decay, whatever its confidence.
func TestTurnCacheTrimFractionAndMaxAge(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, tt := range []struct {
		trim float64
		want []string // rows left after the fifth write, sorted
	}{
		{0.5, []string{"c", "d", "e"}},       // 4 × 0.5 = 2 coldest (a, b) dropped
		{0.25, []string{"b", "c", "d", "e"}}, // 4 × 0.25 = 1
		{0.1, []string{"b", "c", "d", "e"}},  // less than one row: one
	} {
		c := newTurnCache(story.TurnCache{Enabled: true, Cap: 4, TrimFraction: tt.trim})
		for _, k := range []string{"a", "b", "c", "d"} {
			c.put(k, Route{Intent: "hunt"}, t0)
		}
		c.get("c", t0) // used: no longer among the coldest
		c.put("e", Route{Intent: "hunt"}, t0)
		got := slices.Sorted(maps.Keys(c.rows))
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("trim %v: rows (-want +got):\n%s", tt.trim, d)
		}
	}
	c := newTurnCache(story.TurnCache{Enabled: true, Cap: 10, TrimFraction: 0.1, MaxAge: time.Hour})
	c.put("k", Route{Intent: "hunt", Confidence: 0.5}, t0)
	if c.get("k", t0.Add(59*time.Minute)) == nil {
		t.Error("a low-confidence row without confidence_decay lives the whole cache_max_age")
	}
	if c.get("k", t0.Add(time.Hour)) != nil {
		t.Error("a row older than cache_max_age must be dropped")
	}
}
