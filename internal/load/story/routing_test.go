package story

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

func TestLoadRouting(t *testing.T) {
	s, err := Load("testdata/routing/ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Routing.Enabled == nil || !*s.Routing.Enabled || s.Routing.Agent != "agent.router" ||
		s.Routing.MinConfidence == nil || *s.Routing.MinConfidence != 0.7 {
		t.Errorf("routing = %+v", s.Routing)
	}
	syn := s.Intents["forecast"].Synonyms
	want := []Synonym{
		{Text: "weather in {city}", Parts: []SynonymPart{{Word: "weather"}, {Word: "in"}, {Slot: "city"}}, Pos: Pos{File: "ok.yaml", Line: 12, Col: 16}},
		{Text: "what's it like", Pos: Pos{File: "ok.yaml", Line: 12, Col: 37}},
	}
	if d := cmp.Diff(want, syn); d != "" {
		t.Errorf("synonyms (-want +got):\n%s", d)
	}
	if st := s.States["lobby"]; st.DefaultIntent != "chat" || st.DefaultSlot != "message" {
		t.Errorf("default intent = %q/%q", st.DefaultIntent, st.DefaultSlot)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}
}

func TestLoadRoutingErrors(t *testing.T) {
	got := loadErr(t, "testdata/routing/bad.yaml", nil)
	want := []string{
		`bad.yaml:3:12: routing.enabled: expected true or false, got the scalar "yes please"`,
		`bad.yaml:4:10: routing.agent: routing.agent "agent.roter" is not declared in agent_plugins (did you mean "agent.router"?) (declared: agent.claude, agent.router)`,
		`bad.yaml:5:19: routing.min_confidence: min_confidence must be from 0 to 1, got 2`,
		`bad.yaml:6:14: routing.cache_cap: expected an integer, got the scalar "lots"`,
		`bad.yaml:11:16: intents.forecast.synonyms[0]: synonym captures {town}, which is not a slot of intent "forecast"; declared slots: city, day`,
		`bad.yaml:11:37: intents.forecast.synonyms[1]: synonym "{city}{day}": captures {city} and {day} are adjacent; put a word between them`,
		`bad.yaml:11:52: intents.forecast.synonyms[2]: synonym "for {city": unterminated "{"; a capture is written {slot_name}`,
		`bad.yaml:11:65: intents.forecast.synonyms[3]: synonym is empty; write a phrase such as "head out" or a template such as "go {direction}"`,
		`bad.yaml:21:21: states.lobby.default_intent: default_intent "pick": its required slot "n" is "int"; the utterance needs type: string`,
		`bad.yaml:26:21: states.other.default_intent: default_intent "forecast" has no on: arms in state "other" or its ancestors; add on.forecast, or name an intent the state handles`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}

func TestLoadRoutingKeys(t *testing.T) {
	s, err := Load("testdata/routing/keys_ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.Routing
	if high, mid := r.Bars(); high != 0.9 || mid != 0.7 {
		t.Errorf("bars %v %v", high, mid)
	}
	wantCache := TurnCache{Enabled: true, MaxAge: 12 * time.Hour, ConfidenceDecay: true, Cap: 50, TrimFraction: 0.25, RevalidateStrikes: 2}
	if d := cmp.Diff(wantCache, r.Cache); d != "" {
		t.Errorf("cache (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"yall", "wagon"}, r.StopwordsExtra); d != "" {
		t.Errorf("stopwords (-want +got):\n%s", d)
	}
	if !r.ExtractLLMOnNoMatch || r.ExtractLLMAgent != "agent.small" {
		t.Errorf("extract %v %q", r.ExtractLLMOnNoMatch, r.ExtractLLMAgent)
	}
	// cache_dir is relative to the workspace root.
	wantEm := &Embedding{Endpoint: "http://127.0.0.1:8082", Model: DefaultEmbeddingModel, Dim: 128, ConfidentBar: 0.9, Margin: 0.05, Tier: true,
		CacheDir: filepath.Join(s.Workspace.Dir(), ".kitsoki", "cache", "embeddings"), Pos: Pos{File: "keys_ok.yaml", Line: 15, Col: 14}}
	if d := cmp.Diff(wantEm, r.Embedding); d != "" {
		t.Errorf("embedding (-want +got):\n%s", d)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}
}

func TestLoadRoutingKeyErrors(t *testing.T) {
	uc := t.TempDir()
	t.Setenv("KITSOKI_CACHE_DIR", uc)
	got := loadErr(t, "testdata/routing/keys_bad.yaml", nil)
	ws, err := workspace.Find("testdata/routing/keys_bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = strings.ReplaceAll(strings.ReplaceAll(got[i], ws.Dir(), "WS"), uc, "UC")
	}
	want := []string{
		`keys_bad.yaml:4:21: routing.semantic_mid_bar: routing.semantic_mid_bar (0.7) must be below routing.semantic_high_bar (0.6): verdicts between them ask the user to confirm`,
		`keys_bad.yaml:5:18: routing.cache_max_age: cache_max_age must be a duration such as "30d", "12h" or "90s" (0 for none), got "forever"`,
		`keys_bad.yaml:6:24: routing.cache_trim_fraction: routing.cache_trim_fraction must be above 0 (the share of cache_cap dropped when it is full), got 0`,
		`keys_bad.yaml:7:20: routing.stopwords_extra: expected a list of strings, got the scalar "wagon"`,
		`keys_bad.yaml:8:28: routing.extract_llm_agent: routing.extract_llm_agent "agent.local" is not declared in agent_plugins (declared: agent.claude)`,
		`keys_bad.yaml:9:3: routing.extract_llm_agnt: unknown key "extract_llm_agnt" (did you mean "extract_llm_agent"?)`,
		`keys_bad.yaml:10:36: routing.embedding.cache_dir: cache_dir "../../../../../../../../../../etc" must be inside the workspace WS or the user cache directory UC (a path relative to the workspace root, or one under the user cache directory): "../../../../../../../../../../etc" is outside the workspace WS (widen the workspace with --workspace DIR)`,
		`keys_bad.yaml:10:79: routing.embedding.margin: margin must be from 0 to 1, got 2`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
