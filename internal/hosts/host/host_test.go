package host

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// named answers with its own name.
func named(name string) Handler {
	return HandlerFunc(func(context.Context, *Call) (*Result, error) {
		return &Result{Data: map[string]any{"by": name}}, nil
	})
}

// TestDispatchFindsTheHandler: an exact registration wins, then the
// longest registered prefix; an unknown name says what is registered.
func TestDispatchFindsTheHandler(t *testing.T) {
	st := &story.Story{App: story.App{ID: "h"}}
	h := New(st, agent.NewRegistry(nil), trace.NewMemSink())
	defer h.Close()
	h.Register("host.stub.exact", named("exact"))
	h.RegisterPrefix("host.stub.", named("stub"))
	h.RegisterPrefix("host.stub.deep", named("deep"))
	h.Register("host.other", named("first"))
	h.Register("host.other", named("other")) // replaces
	tests := []struct {
		name, want string
	}{
		{"host.stub.exact", "exact"},
		{"host.stub.any", "stub"},
		{"host.stub.deep.er", "deep"},
		{"host.stub.deep", "stub"},
		{"host.other", "other"},
	}
	for _, tt := range tests {
		res, err := h.Dispatch(context.Background(), &Call{Namespace: tt.name})
		if err != nil || res.Data["by"] != tt.want {
			t.Errorf("%s: answered by %v (%v), want %s", tt.name, res, err, tt.want)
		}
	}
	_, err := h.Dispatch(context.Background(), &Call{Namespace: "host.nope"})
	want := `no handler for invoke "host.nope" (registered: host.agent.ask, host.agent.converse, host.agent.decide, host.agent.extract, host.agent.task, host.other, host.stub.exact)`
	if err == nil || err.Error() != want {
		t.Errorf("unknown invoke: %v, want %s", err, want)
	}
	if _, ok := h.Handler("stub"); ok {
		t.Error("a name without a dot matched a prefix")
	}
}

// closeAgent is a built-in agent whose Close fails.
type closeAgent struct{ agent.AgentFunc }

func (closeAgent) Close() error { return errors.New("builtin stuck") }

// TestClose: the host closes its built-in agent and its rankers, joins
// their failures, and a second Close has nothing left to close.
func TestClose(t *testing.T) {
	st := &story.Story{App: story.App{ID: "h"}, Plugins: map[string]agent.Declaration{"agent.e": {Plugin: agent.PluginLocalLLM, Endpoint: "http://127.0.0.1:9"}}}
	h := New(st, agent.NewRegistry(nil), trace.NewMemSink(), WithBuiltin(closeAgent{}),
		WithRanker(func(agent.Declaration) (Ranker, io.Closer, error) {
			return reverseRanker{}, closerFunc(func() error { return errors.New("ranker stuck") }), nil
		}))
	h.registry.Configure(st.Plugins)
	if _, err := h.ranker("agent.e"); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err == nil || err.Error() != "builtin stuck\nranker stuck" {
		t.Errorf("Close = %v, want both failures", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestTraceError: a trace failure says so and unwraps to its cause.
func TestTraceError(t *testing.T) {
	err := error(&TraceError{errSinkFull})
	if err.Error() != "trace: disk full" || !errors.Is(err, errSinkFull) {
		t.Errorf("TraceError = %q, unwraps to cause: %v", err, errors.Is(err, errSinkFull))
	}
}

// askStory loads testdata/ask/app.yaml and returns a host on it whose
// agents all answer okSub, and the story's invokes by id.
func askHost(t *testing.T, opts ...Option) (*Host, map[string]*story.Invoke, *[]*agent.Call) {
	t.Helper()
	st, err := story.Load(filepath.Join("testdata", "ask", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	invs := map[string]*story.Invoke{}
	for _, eff := range st.States["s"].OnEnter {
		invs[eff.Invoke.ID] = eff.Invoke
	}
	var asked []*agent.Call
	a := agent.AgentFunc(func(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
		asked = append(asked, c)
		return &agent.AskResponse{Submission: []byte(`{"decision":"approve"}`)}, nil
	})
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	reg.Register("agent.plug", a)
	h := New(st, reg, trace.NewMemSink(), opts...)
	t.Cleanup(func() { h.Close() })
	return h, invs, &asked
}

// TestPrepareErrors: an agent call that cannot be prepared fails before
// anything is sent or traced, naming the invoke and what to fix.
func TestPrepareErrors(t *testing.T) {
	okWith := map[string]any{"prompt": "Decide.", "schema": "schemas/verdict.json"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range okWith {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	const d = "host.agent.decide: "
	tests := []struct {
		name   string
		verb   string
		invoke string // "" = no invoke; "nope" = an undeclared alias
		with   map[string]any
		want   string
	}{
		{"undeclared alias", "decide", "nope", with(), d + `unknown agent alias "agent.nope" (declare it under agent_plugins:)`},
		{"no built-in path", "decide", "builtin", with(),
			d + "the built-in claude path (an invoke with no agent:) is not available in this build; name an agent_plugins alias with agent:"},
		{"undeclared persona", "decide", "plug", with("agent", "critic"), d + `with.agent "critic" is not declared in agents`},
		{"decide without a schema", "decide", "plug", with("schema", nil),
			d + "with.schema is required (a JSON Schema file relative to the story directory)"},
		{"a schema that does not compile", "decide", "plug", with("schema", "schemas/missing.json"), d + `schema "schemas/missing.json": no such file or directory`},
		{"no prompt", "decide", "plug", with("prompt", nil),
			d + "with.prompt is required (a prompt file relative to the story directory, or the prompt text)"},
		{"a missing prompt_path", "decide", "plug", with("prompt_path", "prompts/none.md"), d + "prompt file prompts/none.md: "},
		{"a broken prompt file", "decide", "plug", with("prompt", "prompts/broken.md"), d + "prompt file prompts/broken.md: "},
		{"a timeout that is no duration", "decide", "plug", with("timeout", "soon"),
			d + `with.timeout: "soon" is not a duration (write e.g. "90s" or 90)`},
		{"a negative timeout", "decide", "plug", with("timeout", "-5s"), d + "with.timeout: must be positive, got -5s"},
		{"a zero timeout", "decide", "plug", with("timeout", 0), d + "with.timeout: must be positive, got 0"},
		{"a timeout of another type", "decide", "plug", with("timeout", true), d + "with.timeout: true is not a duration"},
		{"ask without a prompt", "ask", "plug", map[string]any{}, "host.agent.ask: with.prompt is required (a prompt file relative to the story directory, or the prompt text)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, invs, asked := askHost(t)
			inv := invs[tt.invoke]
			if tt.invoke == "nope" {
				inv = &story.Invoke{Name: AgentNamespace + tt.verb, Agent: "agent.nope"}
			}
			h.builtin = nil
			sink := h.sink.(*trace.MemSink)
			res, err := h.Dispatch(context.Background(), &Call{Namespace: AgentNamespace + tt.verb, Args: tt.with, Invoke: inv, Turn: 1, State: "s"})
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v (result %v), want %s…", err, res, tt.want)
			}
			if len(*asked) != 0 || len(sink.Events()) != 0 {
				t.Errorf("asked %d agents and traced %d events before failing", len(*asked), len(sink.Events()))
			}
		})
	}
}

// TestTimeouts: with.timeout in its accepted forms, and the host's
// default when there is none, set the request's deadline.
func TestTimeouts(t *testing.T) {
	start := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name    string
		timeout any // nil: none
		want    time.Duration
	}{
		{"default", nil, 45 * time.Second},
		{"duration", "90s", 90 * time.Second},
		{"seconds as text", "2.5", 2500 * time.Millisecond},
		{"int", 7, 7 * time.Second},
		{"int64", int64(8), 8 * time.Second},
		{"float", 0.25, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, invs, asked := askHost(t, WithClock(clock.NewFake(start)), WithDefaultTimeout(45*time.Second), WithLogger(slog.New(slog.DiscardHandler)))
			w := map[string]any{"prompt": "Decide.", "schema": "./schemas/verdict.json"}
			if tt.timeout != nil {
				w["timeout"] = tt.timeout
			}
			res, err := h.Dispatch(context.Background(), &Call{Namespace: "host.agent.decide", Args: w, Invoke: invs["plug"], Turn: 1, State: "s"})
			if err != nil || res.Err != nil {
				t.Fatalf("dispatch: %v %v", err, res.Err)
			}
			if len(*asked) != 1 {
				t.Fatalf("asked %d", len(*asked))
			}
			c := (*asked)[0]
			if want := start.Add(tt.want).Format(time.RFC3339Nano); c.Request.Deadline != want {
				t.Errorf("deadline = %s, want %s", c.Request.Deadline, want)
			}
			// A schema path not compiled at load is compiled at run time.
			if c.SchemaPath != "schemas/verdict.json" || c.Validate == nil || c.Validate([]byte(`{"decision":"x"}`)) == nil {
				t.Errorf("run-time schema: path %q, validator %v", c.SchemaPath, c.Validate != nil)
			}
		})
	}
}

// TestPromptFiles: with.prompt names a file when one exists (a text
// template that sees args), else it is the prompt; with.prompt_path is
// always a file.
func TestPromptFiles(t *testing.T) {
	tests := []struct {
		name string
		with map[string]any
		want string
	}{
		{"inline text", map[string]any{"prompt": "Decide now."}, "Decide now."},
		{"a file, with args", map[string]any{"prompt": "prompts/hello.md", "args": map[string]any{"name": "Ada"}}, "Hello Ada.\n"},
		{"a file, seeing the with-map", map[string]any{"prompt": "prompts/hello.md", "name": "Bo"}, "Hello Bo.\n"},
		{"prompt_path", map[string]any{"prompt_path": "prompts/hello.md", "prompt": "ignored", "args": map[string]any{"name": "Cy"}}, "Hello Cy.\n"},
		{"a file compiled at load", map[string]any{"prompt": "prompts/audit.md", "args": map[string]any{"claim": "taxi", "amount": 4}}, "Audit taxi for 4.\n"},
		{"text that names no file", map[string]any{"prompt": "prompts/absent.md"}, "prompts/absent.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, _ := askHost(t)
			for range 2 { // the second render uses the compiled file
				got, err := h.renderPrompt(tt.with)
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("prompt = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

// TestRouteModel: an eval candidate's model label follows the host's rule.
func TestRouteModel(t *testing.T) {
	h, _, _ := askHost(t)
	st := h.story
	judge := st.Agents["judge"]
	tests := []struct {
		name    string
		route   *Route
		persona *agent.Persona
		want    string
	}{
		{"built-in path: the persona's", &Route{}, judge, "persona-model"},
		{"built-in path: agent.claude's declaration", &Route{}, nil, "claude-decl"},
		{"built-in path through a provider", &Route{Provider: "cheap"}, judge, "provider-model"},
		{"an unknown provider adds nothing", &Route{Provider: "nope"}, nil, "claude-decl"},
		{"a plugin: the route's", &Route{Alias: "agent.plug", Model: "m"}, judge, "m"},
		{"a plugin: its declaration's", &Route{Alias: "agent.plug"}, nil, "plug-decl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RouteModel(st, tt.route, tt.persona); got != tt.want {
				t.Errorf("RouteModel = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAgentCallFromOutsideAStory: a call with no invoke (an eval's, a
// test's) goes the built-in path and is traced like any other.
func TestAgentCallFromOutsideAStory(t *testing.T) {
	var got *agent.Call
	builtin := agent.AgentFunc(func(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
		got = c
		return &agent.AskResponse{Submission: []byte(`"hi"`), Meta: map[string]any{"result": "hi"}}, nil
	})
	h, _, _ := askHost(t, WithBuiltin(builtin))
	res, err := h.Dispatch(context.Background(), &Call{Namespace: "host.agent.converse", Args: map[string]any{"prompt": "Hi."}, Turn: 1, State: "s"})
	if err != nil || res.Err != nil {
		t.Fatalf("dispatch: %v %v", err, res.Err)
	}
	if got == nil || got.Alias != "" || got.Request.Verb != plugin.VerbConverse {
		t.Fatalf("built-in agent asked %+v", got)
	}
	want := map[string]any{"submitted": "hi", "stdout": "hi", "exit_code": 0, "ok": true, "meta": map[string]any{"result": "hi"}}
	if diff := cmp.Diff(want, res.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	kinds := []string{}
	for _, ev := range h.sink.(*trace.MemSink).Events() {
		kinds = append(kinds, ev.Kind)
	}
	if diff := cmp.Diff([]string{trace.KindAgentCallStart, trace.KindAgentCallComplete}, kinds); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
}

// TestTraceFailureStopsTheCall: an agent call whose trace cannot be
// written fails as a TraceError, with no result, before the agent is
// asked.
func TestTraceFailureStopsTheCall(t *testing.T) {
	h, invs, asked := askHost(t)
	h.sink.(*trace.MemSink).Close()
	res, err := h.Dispatch(context.Background(), &Call{Namespace: "host.agent.decide",
		Args: map[string]any{"prompt": "Decide.", "schema": "schemas/verdict.json"}, Invoke: invs["plug"], Turn: 1, State: "s"})
	var te *TraceError
	if !errors.As(err, &te) || !errors.Is(err, trace.ErrClosed) || res != nil {
		t.Fatalf("got %v, %v; want a TraceError and no result", res, err)
	}
	if len(*asked) != 0 {
		t.Errorf("the agent was asked %d times", len(*asked))
	}
}
