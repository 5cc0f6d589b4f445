package host

import (
	"context"
	"errors"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// TestAskAgent: the agent gets the call's context and value; its response
// and error go up as they are, and an agent still busy when the context
// ends is abandoned with the context's error.
func TestAskAgent(t *testing.T) {
	resp := &agent.AskResponse{Meta: map[string]any{"m": 1}}
	boom := errors.New("boom")
	tests := []struct {
		name     string
		resp     *agent.AskResponse
		err      error
		hang     bool // the agent ignores its context
		wantResp *agent.AskResponse
		wantRaw  error
	}{
		{name: "answer", resp: resp, wantResp: resp},
		{name: "error", err: boom, wantRaw: boom},
		{name: "both", resp: resp, err: boom, wantResp: resp, wantRaw: boom},
		{name: "abandoned", hang: true, wantRaw: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := stepHost(&recSink{})
			defer h.calls.close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			release := make(chan struct{})
			defer close(release)
			c := stepCall("agent.x")
			type seen struct {
				ctx  context.Context
				call *agent.Call
			}
			got := make(chan seen, 1)
			c.agent = agent.AgentFunc(func(actx context.Context, call *agent.Call) (*agent.AskResponse, error) {
				got <- seen{actx, call}
				if tt.hang {
					cancel()
					<-release
				}
				return tt.resp, tt.err
			})
			a, err := h.askAgent(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			s := <-got
			if s.call != c.ac || s.ctx != ctx {
				t.Errorf("the agent got %p in %v, want the call's value %p and context", s.call, s.ctx, c.ac)
			}
			if a.resp != tt.wantResp || !errors.Is(a.raw, tt.wantRaw) || (tt.wantRaw == nil) != (a.raw == nil) {
				t.Errorf("answer: resp %v raw %v; want %v, %v", a.resp, a.raw, tt.wantResp, tt.wantRaw)
			}
			if a.answered != c.ac || a.err != nil {
				t.Errorf("answered %p err %v; want %p and no judgement", a.answered, a.err, c.ac)
			}
		})
	}
}
