package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

const liveStory = `
app: {id: live}
agent_plugins: {agent.x: {plugin: builtin.inprocess}}
world:
  answer: {type: string, default: ""}
intents: {go: {}, advance: {hidden: true, slots: {why: {type: string}}}}
root: s
states:
  s:
    on:
      go:
        - target: "."
          effects:
            - invoke: host.agent.ask
              agent: agent.x
              with: {prompt: "work"}
              bind: {answer: submission}
      advance: [{target: t, effects: [{set: {why: "{{ slots.why }}"}}]}]
  t: {terminal: true}
`

// TestLiveCallActions drives the actions an agent reaches through kitsoki's
// MCP tools: ask the operator, set the title, report a step, emit an intent
// that fires once the call has settled.
func TestLiveCallActions(t *testing.T) {
	var sess *Session
	hook := host.WithRun(func(call *host.Call) *agent.Run {
		return &agent.Run{Live: sess.LiveCall(call)}
	})
	a := scripted(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		lc := call.Run.Live
		ans, err := lc.AskOperator(ctx, "which way?")
		if err != nil {
			return nil, err
		}
		if err := lc.SetTitle(ctx, "  Route planning "); err != nil {
			return nil, err
		}
		if err := lc.CompleteStep(ctx, "asked"); err != nil {
			return nil, err
		}
		if _, err := lc.AskParent(ctx, "?"); !errors.Is(err, ErrNoParent) {
			return nil, errors.New("AskParent should fail without a parent")
		}
		if err := lc.EmitIntent(ctx, "advance", map[string]any{"why": ans}); err != nil {
			return nil, err
		}
		if lc.World()["answer"] != "" {
			return nil, errors.New("world snapshot missing")
		}
		b, _ := json.Marshal(ans)
		return &agent.AskResponse{Submission: b}, nil
	})
	r := newRig(t, files{"app.yaml": liveStory}, withAgent("agent.x", a), withHostOpts(hook))
	sess = r.sess
	sess.operator = func(_ context.Context, q string) (string, error) { return "left (" + q + ")", nil }
	out := r.do("go")
	if len(out.HostErrors) != 0 || out.Err != nil {
		t.Fatalf("errors: %v %v", out.HostErrors, out.Err)
	}
	if r.sess.State() != "t" || !out.Done {
		t.Errorf("the emitted intent did not fire after the call: state %s", r.sess.State())
	}
	if got := r.sess.World()["why"]; got != "left (which way?)" {
		t.Errorf("why = %v", got)
	}
	if r.sess.Title() != "Route planning" || len(r.sess.Steps()) != 1 {
		t.Errorf("title %q steps %v", r.sess.Title(), r.sess.Steps())
	}
}

func TestLiveCallWithoutOperator(t *testing.T) {
	var sess *Session
	hook := host.WithRun(func(call *host.Call) *agent.Run {
		return &agent.Run{Live: sess.LiveCall(call)}
	})
	a := scripted(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		_, err := call.Run.Live.AskOperator(ctx, "anyone?")
		return nil, err
	})
	r := newRig(t, files{"app.yaml": liveStory}, withAgent("agent.x", a), withHostOpts(hook))
	sess = r.sess
	out := r.do("go")
	if len(out.HostErrors) != 1 || !errors.Is(out.HostErrors[0], ErrNoOperator) {
		t.Errorf("host errors = %v, want ErrNoOperator", out.HostErrors)
	}
}

// TestTitleOwnership: an untitled run's title stays agent-owned after an
// agent sets it (the title tool remains offered); a title given by whoever
// started the run is not, and agents cannot change it.
func TestTitleOwnership(t *testing.T) {
	ctx := context.Background()
	untitled := &Session{}
	if !untitled.TitleOwned() {
		t.Error("an untitled run is not agent-owned")
	}
	if err := untitled.LiveCall(&host.Call{}).SetTitle(ctx, "Taxi claim"); err != nil {
		t.Fatal(err)
	}
	if untitled.Title() != "Taxi claim" || !untitled.TitleOwned() {
		t.Errorf("after an agent set it: title %q, owned %v", untitled.Title(), untitled.TitleOwned())
	}
	if err := untitled.LiveCall(&host.Call{}).SetTitle(ctx, "Taxi claim, approved"); err != nil || untitled.Title() != "Taxi claim, approved" {
		t.Errorf("an agent could not retitle its own title: %v %q", err, untitled.Title())
	}

	given := &Session{}
	WithTitle("  Q3 audit ")(given)
	if given.Title() != "Q3 audit" || given.TitleOwned() {
		t.Errorf("given title: %q, owned %v", given.Title(), given.TitleOwned())
	}
	if err := given.LiveCall(&host.Call{}).SetTitle(ctx, "Mine now"); !errors.Is(err, ErrTitleFixed) || given.Title() != "Q3 audit" {
		t.Errorf("an agent changed a given title: err %v, title %q", err, given.Title())
	}

	blank := &Session{}
	WithTitle("  ")(blank)
	if blank.Title() != "" || !blank.TitleOwned() {
		t.Errorf("a blank given title: %q, owned %v", blank.Title(), blank.TitleOwned())
	}
}
