package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/kitsoki/kitsoki/plugin"
)

// inlineRun is what one run of TestInlineMatchesWorker saw: the trace the
// chain wrote, the outcome and the bind data.
type inlineRun struct {
	Events   []plugin.Event
	Payloads []any
	Err      string
	Kind     agent.ErrorKind
	Data     map[string]any
	Workers  int64 // worker goroutines started
	Log      string
}

// runBoth runs the whole ask chain for an agent function once on a worker
// (agent.AgentFunc) and once inline (agent.InlineFunc), each on a host of
// its own with a fake clock, and returns both runs.
func runBoth(t *testing.T, f func(ctx context.Context, clk *clock.Fake, cancel context.CancelFunc) (*agent.AskResponse, error)) (worker, inline inlineRun) {
	t.Helper()
	run := func(wrap func(agent.AgentFunc) agent.Agent) inlineRun {
		sink := &recSink{seq: 4}
		h, clk := stepHost(sink)
		var log testkit.SyncBuffer
		h.logger = slog.New(slog.NewTextHandler(&log, nil))
		defer h.calls.close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := stepCall("agent.x")
		c.agent = wrap(func(ctx context.Context, _ *agent.Call) (*agent.AskResponse, error) {
			return f(ctx, clk, cancel)
		})
		a, err := h.askChain()(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		r := inlineRun{Events: sink.events, Data: c.result(a).Data, Workers: h.calls.started.Load(), Log: log.String()}
		for _, p := range sink.payloads {
			r.Payloads = append(r.Payloads, p)
		}
		if a.err != nil {
			r.Err, r.Kind = a.err.Error(), a.err.Kind
		}
		return r
	}
	worker = run(func(f agent.AgentFunc) agent.Agent { return f })
	inline = run(func(f agent.AgentFunc) agent.Agent { return agent.InlineFunc(f) })
	return worker, inline
}

// TestInlineMatchesWorker: an agent that answers inline (agent.Inline) is
// asked on the caller's goroutine, and the call's trace, outcome and bind
// data are the ones the same agent gets on a worker: an answer, its
// AskError, an answer after the hard deadline (the fake clock moved past
// it during the call), a run cancelled during the call, a panic.
func TestInlineMatchesWorker(t *testing.T) {
	ok := &agent.AskResponse{Submission: json.RawMessage(`{"v": 1}`), Meta: map[string]any{"model": "m"}}
	const late = "agent: deadline_exceeded: no answer within the hard deadline of 2s; a late answer is discarded"
	tests := []struct {
		name     string
		agent    func(ctx context.Context, clk *clock.Fake, cancel context.CancelFunc) (*agent.AskResponse, error)
		wantErr  string
		wantKind agent.ErrorKind
		wantLog  string // in the host's log
	}{
		{name: "answer", agent: func(context.Context, *clock.Fake, context.CancelFunc) (*agent.AskResponse, error) {
			return ok, nil
		}},
		{name: "answer with the deadline in ctx", agent: func(ctx context.Context, clk *clock.Fake, _ context.CancelFunc) (*agent.AskResponse, error) {
			if left, has := clock.Remaining(ctx, clk); !has || left != 2*time.Second {
				return nil, agent.Errorf(agent.KindTransportError, "left %v %v", left, has)
			}
			clk.Advance(time.Second)
			return ok, nil
		}},
		{name: "AskError", agent: func(context.Context, *clock.Fake, context.CancelFunc) (*agent.AskResponse, error) {
			return nil, agent.Errorf(agent.KindTransportError, "refused")
		}, wantErr: "agent: transport_error: refused", wantKind: agent.KindTransportError},
		{name: "late answer", agent: func(_ context.Context, clk *clock.Fake, _ context.CancelFunc) (*agent.AskResponse, error) {
			clk.Advance(3 * time.Second)
			return ok, nil
		}, wantErr: late, wantKind: agent.KindDeadlineExceeded},
		{name: "cancelled run", agent: func(_ context.Context, _ *clock.Fake, cancel context.CancelFunc) (*agent.AskResponse, error) {
			cancel()
			return ok, nil
		}, wantErr: "agent: deadline_exceeded: call cancelled: context canceled", wantKind: agent.KindDeadlineExceeded},
		{name: "panic", agent: func(context.Context, *clock.Fake, context.CancelFunc) (*agent.AskResponse, error) {
			panic("boom")
		}, wantErr: "agent: plugin_crash: agent panicked: boom", wantKind: agent.KindPluginCrash, wantLog: `msg="agent panicked" agent=agent.x panic=boom stack=`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			worker, inline := runBoth(t, tt.agent)
			if worker.Workers != 1 || inline.Workers != 0 {
				t.Errorf("workers started: %d on the worker path, %d inline; want 1 and 0", worker.Workers, inline.Workers)
			}
			if inline.Err != tt.wantErr || inline.Kind != tt.wantKind {
				t.Errorf("inline: err %q (%s), want %q (%s)", inline.Err, inline.Kind, tt.wantErr, tt.wantKind)
			}
			if !strings.Contains(inline.Log, tt.wantLog) || (tt.wantLog == "") != (inline.Log == "") {
				t.Errorf("inline log %q, want it to hold %q", inline.Log, tt.wantLog)
			}
			if !strings.Contains(worker.Log, tt.wantLog) || (tt.wantLog == "") != (worker.Log == "") {
				t.Errorf("worker log %q, want it to hold %q", worker.Log, tt.wantLog)
			}
			worker.Workers, inline.Workers, worker.Log, inline.Log = 0, 0, "", ""
			if diff := cmp.Diff(worker, inline); diff != "" {
				t.Errorf("inline differs from the worker path (-worker +inline):\n%s", diff)
			}
			if len(inline.Payloads) != 2 {
				t.Errorf("%d trace lines, want agent.call.start and its closing line", len(inline.Payloads))
			}
		})
	}
}

// notInline is an agent that implements agent.Inline but declines.
type notInline struct{ agent.AgentFunc }

func (notInline) AnswersInline(*agent.Call) bool { return false }

// TestBlockingAgentIsAbandoned: an agent that blocks and did not opt in
// (a plain AgentFunc, or one whose AnswersInline says no for the call) is
// asked on a worker and abandoned when the fake clock passes the hard
// deadline, while it still blocks.
func TestBlockingAgentIsAbandoned(t *testing.T) {
	for name, wrap := range map[string]func(agent.AgentFunc) agent.Agent{
		"AgentFunc":           func(f agent.AgentFunc) agent.Agent { return f },
		"AnswersInline=false": func(f agent.AgentFunc) agent.Agent { return notInline{f} },
	} {
		t.Run(name, func(t *testing.T) {
			h, clk := stepHost(&recSink{})
			defer h.calls.close()
			started, release := make(chan struct{}), make(chan struct{})
			defer close(release)
			c := stepCall("agent.x")
			c.agent = wrap(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
				close(started)
				<-release // ignores its context
				return &agent.AskResponse{}, nil
			})
			go func() {
				<-started
				clk.Advance(2 * time.Second)
			}()
			a, err := h.askChain()(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			const want = "agent: deadline_exceeded: no answer within the hard deadline of 2s; a late answer is discarded"
			if a.err == nil || a.err.Error() != want {
				t.Errorf("err = %v, want %q", a.err, want)
			}
			if n := h.calls.started.Load(); n != 1 {
				t.Errorf("%d workers started, want 1", n)
			}
		})
	}
}

// TestInlineAskErrorAfterTheDeadline: an inline agent that fails with an
// AskError once the deadline has passed gets what a worker's caller sees
// when the deadline ends its wait first: deadline_exceeded, the agent's
// own verdict dropped with its late answer.
func TestInlineAskErrorAfterTheDeadline(t *testing.T) {
	h, clk := stepHost(&recSink{})
	c := stepCall("agent.x")
	c.agent = agent.InlineFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
		clk.Advance(5 * time.Second)
		return nil, agent.Errorf(agent.KindTransportError, "refused")
	})
	a, err := h.askChain()(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	const want = "agent: deadline_exceeded: no answer within the hard deadline of 2s; a late answer is discarded"
	if a.err == nil || a.err.Error() != want {
		t.Errorf("err = %v, want %q", a.err, want)
	}
}
