package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// gateStory: start's on_enter auto-advances to review; review is a
// decision gate (accept and redo lead elsewhere, nothing emits them) whose
// on_enter emits accept. pinned is the same room pinned decider: llm,
// forced the same with decider: human in a one-shot run.
const gateStory = `app: {id: gates}
intents:
  go: {}
  go_pinned: {}
  go_forced: {}
  to_review: {}
  accept: {}
  redo: {}
root: start
states:
  start:
    on:
      go: [{target: review}]
      go_pinned: [{target: pinned}]
      go_forced: [{target: forced}]
  review:
    on_enter:
      - emit_intent: accept
    on:
      accept: [{target: done}]
      redo: [{target: start}]
  pinned:
    decider: llm
    on_enter:
      - emit_intent: accept
    on:
      accept: [{target: done}]
      redo: [{target: start}]
  forced:
    decider: human
    on_enter:
      - emit_intent: accept
    on:
      accept: [{target: done}]
  done:
    terminal: true
`

// In staged mode the emit_intent chain stops at a decision gate unless the
// room says decider: llm; decider: human stops it in every mode.
func TestExecModes(t *testing.T) {
	tests := []struct {
		mode, line, want string
	}{
		{"", "go", "done"},
		{ModeOneShot, "go", "done"},
		{ModeStaged, "go", "review"},
		{ModeStaged, "go_pinned", "done"},
		{ModeOneShot, "go_forced", "forced"},
		{ModeStaged, "go_forced", "forced"},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.line, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": gateStory}, withExecMode(tt.mode))
			if out := r.do(tt.line); out.State != tt.want {
				t.Errorf("state = %q, want %q (%v)", out.State, tt.want, out.Err)
			}
		})
	}
}

func TestExecModeUnknown(t *testing.T) {
	err := CheckExecMode("batch")
	if err == nil || err.Error() != `unknown execution mode "batch": use one_shot or staged` {
		t.Errorf("err = %v", err)
	}
}

const keysStory = `app: {id: keys}
world:
  count: {type: int, default: 0}
intents:
  go:
    slots:
      dir: {type: string, required: true, validator: "value != 'down' && len(value) < 6"}
  tag:
    slots:
      tags: {type: list, required: true}
  peek: {}
root: hall
states:
  hall:
    view: "hall, count {{ world.count }}"
    on:
      go:
        - target: room
          view: "You go {{ slots.dir }}; count {{ world.count }}."
      tag: [{target: .}]
      peek:
        - when: "world.count > 5"
          target: room
        - default: true
          target: .
  room:
    view: "room"
    on:
      go: [{target: hall}]
`

// A transition's view: replaces the target's view for that turn only.
func TestArmView(t *testing.T) {
	r := newRig(t, files{"app.yaml": keysStory})
	if out := r.do("go dir=north"); out.View != "You go north; count 0." {
		t.Errorf("view = %q", out.View)
	}
	if out := r.do("go dir=south"); out.View != "hall, count 0" {
		t.Errorf("view after an arm without view: = %q", out.View)
	}
	// Only the arm's view is rendered: the target's own is not needed, so a
	// target view that cannot render does not fail the turn.
	broken := strings.Replace(keysStory, `view: "room"`, `view: "{{ world.count.x }}"`, 1)
	r = newRig(t, files{"app.yaml": broken})
	if out := r.do("go dir=north"); out.Err != nil || out.View != "You go north; count 0." {
		t.Errorf("arm view over a target view that fails: view %q, err %v", out.View, out.Err)
	}
}

// A slot validator rejects a value it is false for, with the value and the
// expression; a list slot typed as a,b is a list.
func TestSlotValidatorAndList(t *testing.T) {
	r := newRig(t, files{"app.yaml": keysStory})
	tests := []struct{ line, want string }{
		{"go dir=down", `INVALID_SLOT_VALUE: slot "dir" of intent "go": "down" is rejected by its validator "value != 'down' && len(value) < 6"`},
		{"go dir=northwest", `INVALID_SLOT_VALUE: slot "dir" of intent "go": "northwest" is rejected by its validator "value != 'down' && len(value) < 6"`},
	}
	for _, tt := range tests {
		out := r.do(tt.line)
		if out.Rejection == nil || out.Rejection.Error() != tt.want {
			t.Errorf("%s: rejection = %v, want %s", tt.line, out.Rejection, tt.want)
		}
	}
	_, slots, err := r.sess.ParseInput("tag tags='a,b, c'")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"tags": []any{"a", "b", "c"}}, slots); d != "" {
		t.Errorf("slots (-want +got):\n%s", d)
	}
}

// OverrideWorld sets the world at the start of the next turn, before its
// guards, traced as world.update; a value of the wrong type is refused.
func TestOverrideWorld(t *testing.T) {
	r := newRig(t, files{"app.yaml": keysStory})
	if err := r.sess.OverrideWorld(map[string]any{"count": 9}); err != nil {
		t.Fatal(err)
	}
	out, err := r.sess.Turn(context.Background(), "peek", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if out.State != "room" {
		t.Errorf("state = %q, want room (the guard saw count 9)", out.State)
	}
	if d := cmp.Diff([]string{"turn.input", "turn.start", "world.update", "machine.intent_accepted"}, r.kinds(1)[:4]); d != "" {
		t.Errorf("turn 1 kinds (-want +got):\n%s", d)
	}
	err = r.sess.OverrideWorld(map[string]any{"count": "many"})
	if err == nil || err.Error() != `world override: world key "count" is declared int; the initial value "many" is not an int` {
		t.Errorf("err = %v", err)
	}
}

const historyStory = `app: {id: history}
world:
  entered: {type: int, default: 0}
intents:
  open: {}
  peek: {}
  stay: {}
root: lobby
states:
  lobby:
    on_enter:
      - increment: {entered: 1}
    on:
      open: [{target: room}]
      peek: [{target: side, push_history: false}]
  room:
    on:
      stay: [{target: .}]
      open: [{target: side}]
  side:
    on:
      open: [{target: lobby}]
`

// Transitions push the room they leave; push_history: false does not;
// Back returns to the last one without running its on_enter; an empty
// history is ErrNoHistory with nothing traced.
func TestHistoryAndBack(t *testing.T) {
	r := newRig(t, files{"app.yaml": historyStory})
	ctx := context.Background()
	if _, err := r.sess.Back(ctx); err != ErrNoHistory {
		t.Fatalf("Back on an empty history: %v", err)
	}
	r.do("open") // lobby -> room
	r.do("stay") // a stay pushes nothing
	r.do("open") // room -> side
	if d := cmp.Diff([]string{"lobby", "room"}, r.sess.History()); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	out, err := r.sess.Back(ctx)
	if err != nil || out.State != "room" {
		t.Fatalf("Back = %v, %v; want room", out, err)
	}
	out, err = r.sess.Back(ctx)
	if err != nil || out.State != "lobby" || r.sess.World()["entered"] != int64(1) {
		t.Fatalf("Back = %v, %v (entered %v); want lobby, its on_enter not run again", out, err, r.sess.World()["entered"])
	}
	tr := r.events("machine.transition")
	if last := tr[len(tr)-1].Payload; last["intent"] != BackIntent || last["from"] != "room" || last["to"] != "lobby" {
		t.Errorf("last machine.transition = %v", last)
	}
	r.do("peek") // push_history: false
	if h := r.sess.History(); len(h) != 0 {
		t.Errorf("history after a push_history: false arm = %v", h)
	}
}

const idStory = `app: {id: ids}
hosts: [host.count]
world:
  n: {type: int, default: 1}
  got: {type: string, default: "x"}
  note: {type: string, default: "stale"}
intents:
  go: {}
root: s
states:
  s:
    on:
      go:
        - target: .
          effects:
            - invoke: host.count
              id: "count-{{ world.n }}"
              bind: {got: call, note: ""}
            - increment: {n: 1}
`

// A templated id: is rendered once, when the invoke is queued (before the
// chain's increment: the dispatch-time re-rendering of with: keeps it), and
// sent as the call key; a bind: source of "" clears its key.
func TestTemplatedIDAndEmptyBind(t *testing.T) {
	var calls []string
	h := host.HandlerFunc(func(_ context.Context, c *host.Call) (*host.Result, error) {
		id, _ := c.Args["call"].(string)
		calls = append(calls, id)
		return &host.Result{Data: map[string]any{"call": id}}, nil
	})
	r := newRig(t, files{"app.yaml": idStory})
	r.host.Register("host.count", h)
	r.do("go")
	r.do("go")
	if d := cmp.Diff([]string{"count-1", "count-2"}, calls); d != "" {
		t.Errorf("call ids (-want +got):\n%s", d)
	}
	if w := r.sess.World(); w["got"] != "count-2" || w["note"] != "" {
		t.Errorf("world = %v, want got count-2 and note cleared", w)
	}
}

const costStory = `app: {id: costs}
hosts: [host.agent.ask, host.tool]
agent_plugins:
  agent.paid: {plugin: builtin.inprocess}
intents:
  ask: {}
  tool: {}
root: s
states:
  s:
    on:
      ask:
        - target: .
          effects:
            - invoke: host.agent.ask
              agent: agent.paid
              with: {prompt: "one"}
            - invoke: host.agent.ask
              agent: agent.paid
              with: {prompt: "two"}
      tool:
        - target: .
          effects:
            - invoke: host.tool
`

// The agent spend of a dispatch batch is folded into turn_cost_usd (the
// batch's) and session_cost_usd (the running total), traced as
// world.update; a batch without agent spend puts turn_cost_usd back to 0.
func TestCostFolding(t *testing.T) {
	paid := agent.AgentFunc(func(ctx context.Context, c *agent.Call) (*agent.AskResponse, error) {
		return &agent.AskResponse{Submission: []byte(`"ok"`), Meta: map[string]any{"cost_usd": 0.25}}, nil
	})
	r := newRig(t, files{"app.yaml": costStory}, withAgent("agent.paid", paid))
	r.host.Register("host.tool", host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) {
		return &host.Result{Data: map[string]any{"ok": true}}, nil
	}))
	steps := []struct {
		line        string
		turn, total float64
	}{{"ask", 0.5, 0.5}, {"ask", 0.5, 1.0}, {"tool", 0, 1.0}, {"tool", 0, 1.0}}
	for i, st := range steps {
		r.do(st.line)
		w := r.sess.World()
		if w["turn_cost_usd"] != st.turn || w["session_cost_usd"] != st.total {
			t.Errorf("step %d (%s): turn %v session %v, want %v %v", i, st.line, w["turn_cost_usd"], w["session_cost_usd"], st.turn, st.total)
		}
	}
	// The last tool turn changed nothing: no cost update is traced.
	for _, ev := range r.events("world.update") {
		if ev.Turn == 4 {
			t.Errorf("turn 4 wrote %v", ev.Payload)
		}
	}
}
