package host

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// t0 is the fake clock's start in the step tests.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// recSink is a fake trace sink: it keeps what was appended, typed, and
// fails the append numbered failAt (1-based; 0 never fails).
type recSink struct {
	seq      int // what NextSeq returns
	failAt   int
	appended int
	events   []plugin.Event // envelope of each append
	payloads []trace.Payload
}

var errSinkFull = errors.New("disk full")

func (s *recSink) append(ev *plugin.Event, p trace.Payload) error {
	s.appended++
	if s.appended == s.failAt {
		return errSinkFull
	}
	s.events = append(s.events, *ev)
	s.payloads = append(s.payloads, p)
	return nil
}

func (s *recSink) Append(ev *plugin.Event) error                         { return s.append(ev, nil) }
func (s *recSink) AppendPayload(ev *plugin.Event, p trace.Payload) error { return s.append(ev, p) }
func (s *recSink) NextSeq(int64) int                                     { return s.seq }
func (s *recSink) Now() time.Time                                        { return t0 }

// stepHost is a host with only what the steps read: story app id and
// providers, a fake clock, a fake sink, a registry, no secrets.
func stepHost(sink *recSink) (*Host, *clock.Fake) {
	clk := clock.NewFake(t0)
	h := &Host{
		story: &story.Story{App: story.App{ID: "app"}, Providers: map[string]agent.Provider{"cheap": {Name: "cheap", Model: "provider-model"}}},
		sink:  sink, clock: clk, mask: secret.New(), calls: newRunner(), logger: slog.New(slog.DiscardHandler),
		registry: agent.NewRegistry(nil), timeout: DefaultTimeout,
	}
	return h, clk
}

// stepCall is an agent call as prepare leaves it, routed to alias.
func stepCall(alias string) *askCall {
	req := &agent.AskRequest{SessionID: "sess", Turn: 3, StatePath: "s", Verb: plugin.VerbDecide, Prompt: "Decide.", CallID: "cid"}
	return &askCall{
		verb: plugin.VerbDecide, call: &Call{Turn: 3, State: "s", Args: map[string]any{}},
		alias: alias, req: req, timeout: 2 * time.Second,
		ac: &agent.Call{Request: req, Alias: alias, Model: "m"},
	}
}

// spy is a fake next: it records the calls it got and returns its answer.
type spy struct {
	ans   answer
	err   error
	do    func(ctx context.Context, c *askCall) // runs before answering
	calls []askCall
}

func (s *spy) next(ctx context.Context, c *askCall) (answer, error) {
	s.calls = append(s.calls, *c)
	if s.do != nil {
		s.do(ctx, c)
	}
	return s.ans, s.err
}

// compileSchema compiles a schema document for the step tests.
func compileSchema(t *testing.T, doc string) *schema.Schema {
	t.Helper()
	s, err := schema.CompileDocument("v.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestChain: steps run in the order given, each around the rest, and the
// final function last; a step that does not call next ends the chain.
func TestChain(t *testing.T) {
	var got []string
	step := func(name string, stop bool) askStep {
		return func(ctx context.Context, c *askCall, next askFunc) (answer, error) {
			got = append(got, name+">")
			if stop {
				return answer{}, errors.New(name)
			}
			a, err := next(ctx, c)
			got = append(got, "<"+name)
			return a, err
		}
	}
	final := func(context.Context, *askCall) (answer, error) {
		got = append(got, "final")
		return answer{submission: "done"}, nil
	}
	tests := []struct {
		name    string
		steps   []askStep
		want    []string
		wantErr string
	}{
		{"no steps", nil, []string{"final"}, ""},
		{"one step", []askStep{step("a", false)}, []string{"a>", "final", "<a"}, ""},
		{"outermost first", []askStep{step("a", false), step("b", false), step("c", false)},
			[]string{"a>", "b>", "c>", "final", "<c", "<b", "<a"}, ""},
		{"a step that stops", []askStep{step("a", false), step("b", true), step("c", false)},
			[]string{"a>", "b>", "<a"}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			a, err := chain(final, tt.steps...)(context.Background(), stepCall("agent.x"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantErr == "" && (err != nil || a.submission != "done"):
				t.Errorf("got %v, %v; want the final answer", a.submission, err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Errorf("err = %v, want %s", err, tt.wantErr)
			}
		})
	}
}
