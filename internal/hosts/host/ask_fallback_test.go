package host

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// fallbackable is an agent that says whether its rejected answers may be
// retried on agent.claude.
type fallbackable struct {
	agent.AgentFunc
	ok bool
}

func (f fallbackable) FallbackEligible() bool { return f.ok }

// TestStepFallback: only a schema_invalid answer of a fallback-eligible
// agent other than agent.claude is retried, once, on agent.claude, as a
// call of its own; the answer records the substitution and a successful
// one says whom it stands in for in a copy of its meta.
func TestStepFallback(t *testing.T) {
	invalid := agent.Errorf(agent.KindSchemaInvalid, "/decision: enum")
	eligible, notEligible := fallbackable{ok: true}, fallbackable{ok: false}
	claude := agent.AgentFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) { return nil, nil })
	subst := &trace.Substitution{Reason: "schema_invalid", OriginalPlugin: "agent.local", FallbackPlugin: agent.DefaultAlias}
	sharedMeta := map[string]any{"by": "claude"}
	tests := []struct {
		name      string
		alias     string
		agent     agent.Agent
		noClaude  bool
		answers   []answer // what next returns, call by call
		nextErr   []error
		wantCalls int
		want      answer
		wantErr   string
	}{
		{name: "success passes", alias: "agent.local", agent: eligible,
			answers: []answer{{submission: "ok"}}, wantCalls: 1, want: answer{submission: "ok"}},
		{name: "another failure kind passes", alias: "agent.local", agent: eligible,
			answers: []answer{{err: agent.Errorf(agent.KindTransportError, "refused")}}, wantCalls: 1,
			want: answer{err: agent.Errorf(agent.KindTransportError, "refused")}},
		{name: "an agent that is not fallback-eligible fails hard", alias: "agent.local", agent: agent.AgentFunc(nil),
			answers: []answer{{err: invalid}}, wantCalls: 1, want: answer{err: invalid}},
		{name: "an eligible agent that declines fails hard", alias: "agent.local", agent: notEligible,
			answers: []answer{{err: invalid}}, wantCalls: 1, want: answer{err: invalid}},
		{name: "the built-in path is not retried", alias: "", agent: eligible,
			answers: []answer{{err: invalid}}, wantCalls: 1, want: answer{err: invalid}},
		{name: "agent.claude is not retried on itself", alias: agent.DefaultAlias, agent: eligible,
			answers: []answer{{err: invalid}}, wantCalls: 1, want: answer{err: invalid}},
		{name: "an error from further in passes", alias: "agent.local", agent: eligible,
			answers: []answer{{}}, nextErr: []error{errSinkFull}, wantCalls: 1, wantErr: "disk full"},
		{name: "retried on agent.claude", alias: "agent.local", agent: eligible,
			answers:   []answer{{err: invalid}, {resp: &agent.AskResponse{Meta: sharedMeta}, submission: "ok"}},
			wantCalls: 2,
			want:      answer{resp: &agent.AskResponse{Meta: map[string]any{"by": "claude", "fallback_of": "agent.local"}}, submission: "ok", subst: subst}},
		{name: "retried, no meta", alias: "agent.local", agent: eligible,
			answers:   []answer{{err: invalid}, {resp: &agent.AskResponse{}, submission: "ok"}},
			wantCalls: 2,
			want:      answer{resp: &agent.AskResponse{Meta: map[string]any{"fallback_of": "agent.local"}}, submission: "ok", subst: subst}},
		{name: "the retry fails too", alias: "agent.local", agent: eligible,
			answers:   []answer{{err: invalid}, {err: agent.Errorf(agent.KindSchemaInvalid, "again")}},
			wantCalls: 2, want: answer{err: agent.Errorf(agent.KindSchemaInvalid, "again"), subst: subst}},
		{name: "the retry's trace fails", alias: "agent.local", agent: eligible,
			answers: []answer{{err: invalid}, {}}, nextErr: []error{nil, errSinkFull}, wantCalls: 2, wantErr: "disk full"},
		{name: "agent.claude unavailable", alias: "agent.local", agent: eligible, noClaude: true,
			answers: []answer{{err: invalid}}, wantCalls: 1,
			want: answer{err: agent.Errorf(agent.KindTransportError, `fallback to agent.claude: unknown agent alias "agent.claude" (declare it under agent_plugins:)`), subst: subst}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := stepHost(&recSink{})
			h.registry.Configure(map[string]agent.Declaration{
				"agent.local":      {Plugin: agent.PluginInProcess},
				agent.DefaultAlias: {Plugin: agent.PluginInProcess, Model: "claude-decl"},
			})
			if tt.noClaude {
				h.registry.Configure(map[string]agent.Declaration{"agent.local": {Plugin: agent.PluginInProcess}})
			} else {
				h.registry.Register(agent.DefaultAlias, claude)
			}
			c := stepCall(tt.alias)
			c.agent = tt.agent
			c.persona = &agent.Persona{Name: "judge", Model: "persona-model"}
			var calls []askCall
			next := func(_ context.Context, c *askCall) (answer, error) {
				calls = append(calls, *c)
				i := len(calls) - 1
				var err error
				if i < len(tt.nextErr) {
					err = tt.nextErr[i]
				}
				return tt.answers[i], err
			}
			a, err := h.stepFallback(context.Background(), c, next)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(calls) != tt.wantCalls {
				t.Fatalf("next called %d times, want %d", len(calls), tt.wantCalls)
			}
			if tt.wantErr == "" {
				// answered is the retry's own call value, checked below.
				if tt.noClaude && (a.answered == nil || a.answered.Alias != agent.DefaultAlias || a.answered.Model != "persona-model") {
					t.Errorf("answered by %+v, want the agent.claude call that could not be made", a.answered)
				}
				a.answered = nil
				if diff := cmp.Diff(tt.want, a, cmp.AllowUnexported(answer{}), cmp.Comparer(sameAskError)); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			}
			if sharedMeta["fallback_of"] != nil {
				t.Error("the fallback annotated the agent's own meta, not a copy")
			}
			if tt.wantCalls == 2 {
				retry := calls[1]
				if retry.alias != agent.DefaultAlias || retry.agent == nil || retry.ac.Alias != agent.DefaultAlias ||
					retry.ac.Model != "persona-model" || retry.ac.Request != c.req || retry.ac == c.ac {
					t.Errorf("retry: alias %q, call %+v; want agent.claude with a call value of its own on the same request", retry.alias, retry.ac)
				}
				if c.alias != tt.alias || c.ac.Alias != tt.alias {
					t.Errorf("the first call changed: alias %q", c.alias)
				}
			}
		})
	}
}

// sameAskError compares AskErrors by what they say.
func sameAskError(a, b *agent.AskError) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.Error() == b.Error()
}
