package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// machine exercises every transition rule of story-format.md §7 and §12.
const machine = `
app: {id: machine}
world:
  n: {type: int, default: 0}
  flag: {type: bool, default: false}
  visits: {type: int, default: 0}
  log: {type: string, default: ""}
exits:
  done: {description: "finished"}
intents:
  go: {slots: {to: {type: string}}}
  stay: {}
  again: {}
  pick: {slots: {n: {type: int, required: true}}}
  hinted: {}
  broken: {}
  leave: {}
  anything: {}
  up: {}
  auto: {hidden: true}
  loop: {hidden: true}
  spin: {}
root: a
states:
  a:
    description: "state a"
    on_enter:
      - increment: {visits: 1}
    on:
      go:
        - when: "slots.to == 'b'"
          target: b
        - when: "slots.to == 'c'"
          target: c
        - default: true
          when: "false"
          target: d
      stay:
        - target: "."
          effects: [{set: {log: "stayed"}}]
      again:
        - target: a
      pick:
        - when: "slots.n > 10"
          target: b
          guard_hint: "n must be over 10"
        - when: "slots.n > 5"
          target: c
          guard_hint: "second hint"
        - target: d
          when: "slots.n > 3"
      hinted:
        - when: "false"
          target: b
        - when: "false"
          target: c
          guard_hint: "only hint"
      broken:
        - when: "world.missing.field == 1"
          target: b
      leave:
        - target: "@exit:done"
      spin:
        - target: spinning
  b:
    description: "state b"
    on:
      "*":
        - target: a
          effects: [{set: {log: "star"}}]
  c:
    description: "state c"
    on_enter:
      - emit_intent: auto
    on:
      auto:
        - target: e
          effects: [{set: {log: "auto fired"}}]
  d: {description: "terminal d", terminal: true}
  e:
    description: "state e"
    on:
      up: [{target: e.inner}]
  e.inner:
    description: "child of e"
    on:
      go: [{target: a}]
  spinning:
    description: "emits forever"
    on_enter:
      - emit_intent: loop
    on:
      loop: [{target: spinning}]
`

func TestArmChoice(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		wantState string
		wantOut   string
		wantCode  string
		wantHint  string
	}{
		{"first true when wins", "go to=b", "b", OutcomeTransitioned, "", ""},
		{"second when", "go to=c", "e", OutcomeTransitioned, "", ""}, // c auto-fires to e
		{"default wins when reached, its when ignored", "go to=zzz", "d", OutcomeTransitioned, "", ""},
		{"first true of several", "pick n=7", "e", OutcomeTransitioned, "", ""}, // c auto-fires to e
		{"guard failed with first non-empty hint", "pick n=1", "a", OutcomeRejected, CodeGuardFailed, "n must be over 10"},
		{"hint of a later arm", "hinted", "a", OutcomeRejected, CodeGuardFailed, "only hint"},
		{"guard error aborts the turn", "broken", "a", OutcomeError, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": machine})
			out := r.do(tt.line)
			if out.Outcome != tt.wantOut {
				t.Fatalf("outcome = %s (err %v, rejection %+v), want %s", out.Outcome, out.Err, out.Rejection, tt.wantOut)
			}
			if got := r.sess.State(); got != tt.wantState && tt.wantOut == OutcomeTransitioned {
				t.Errorf("state = %q, want %q", got, tt.wantState)
			}
			if tt.wantCode != "" {
				if out.Rejection.Code != tt.wantCode || out.Rejection.GuardHint != tt.wantHint {
					t.Errorf("rejection = %+v, want code %s hint %q", out.Rejection, tt.wantCode, tt.wantHint)
				}
			}
		})
	}
}

func TestGuardFailedMessage(t *testing.T) {
	r := newRig(t, files{"app.yaml": machine})
	out := r.do("pick n=0")
	if got, want := out.Rejection.Error(), `GUARD_FAILED: no transition matched for intent "pick" in state "a"`; got != want {
		t.Errorf("rejection = %q, want %q", got, want)
	}
	vf := r.events("machine.validation_failed")
	if len(vf) != 1 || vf[0].Payload["guard_hint"] != "n must be over 10" || vf[0].Payload["code"] != CodeGuardFailed {
		t.Errorf("validation_failed events = %v", vf)
	}
	end := r.events("turn.end")
	if got := jsonOf(t, end[len(end)-1].Payload); got != `{"code":"GUARD_FAILED","outcome":"rejected"}` {
		t.Errorf("turn.end payload = %s", got)
	}
}

func TestGuardErrorIsMachineError(t *testing.T) {
	r := newRig(t, files{"app.yaml": machine})
	out := r.do("broken")
	if out.Err == nil {
		t.Fatal("no error on a guard fault")
	}
	me := r.events("machine.error")
	if len(me) != 1 {
		t.Fatalf("machine.error events: %d", len(me))
	}
	if me[0].Payload["intent"] != "broken" || me[0].Payload["state"] != "a" || me[0].Payload["error"] == "" {
		t.Errorf("machine.error payload = %v", me[0].Payload)
	}
	end := r.events("turn.end")
	if end[len(end)-1].Payload["outcome"] != OutcomeError {
		t.Errorf("turn.end = %v", end[len(end)-1].Payload)
	}
}

func TestStayReentryAndEntry(t *testing.T) {
	r := newRig(t, files{"app.yaml": machine})
	if got := r.sess.World()["visits"]; got != int64(1) {
		t.Fatalf("visits after start = %v (%T), want 1", got, got)
	}
	r.do("stay") // "." : no exit, no entry, no on_enter
	if got := r.sess.World()["visits"]; got != int64(1) {
		t.Errorf(`"." ran on_enter: visits = %v`, got)
	}
	if diff := cmp.Diff([]string{"turn.input", "turn.start", "machine.intent_accepted", "machine.transition", "world.update", "turn.end"}, r.kinds(1)); diff != "" {
		t.Errorf("stay turn kinds (-want +got):\n%s", diff)
	}
	r.do("again") // own name: exit and re-enter, on_enter runs again
	if got := r.sess.World()["visits"]; got != int64(2) {
		t.Errorf("re-entry did not run on_enter: visits = %v", got)
	}
	if diff := cmp.Diff([]string{"turn.input", "turn.start", "machine.intent_accepted", "machine.transition", "machine.state_exited", "machine.state_entered", "world.update", "turn.end"}, r.kinds(2)); diff != "" {
		t.Errorf("re-entry turn kinds (-want +got):\n%s", diff)
	}
}

func TestStarArmsAndAncestors(t *testing.T) {
	r := newRig(t, files{"app.yaml": machine})
	r.do("go to=b")
	out := r.do("anything") // b has only "*" arms
	if out.Outcome != OutcomeTransitioned || r.sess.State() != "a" || r.sess.World()["log"] != "star" {
		t.Fatalf("* arm: outcome %s state %s log %v", out.Outcome, r.sess.State(), r.sess.World()["log"])
	}
	r.do("go to=c") // c emits auto → e
	r.do("up")      // e → e.inner
	if r.sess.State() != "e.inner" {
		t.Fatalf("state = %s, want e.inner", r.sess.State())
	}
	// e.inner's own go arm; leaving e.inner for a exits inner then e.
	r.do("go")
	if r.sess.State() != "a" {
		t.Fatalf("state = %s, want a", r.sess.State())
	}
	var exited []string
	for _, ev := range r.events("machine.state_exited") {
		if ev.Turn == 5 {
			exited = append(exited, ev.Payload["state"].(string))
		}
	}
	if diff := cmp.Diff([]string{"e.inner", "e"}, exited); diff != "" {
		t.Errorf("exit order (-want +got):\n%s", diff)
	}
}

func TestChildInheritsParentArms(t *testing.T) {
	const st = `
app: {id: nest}
intents: {in: {}, out: {}}
root: p
states:
  p:
    on:
      in: [{target: p.c}]
      out: [{target: q}]
  p.c: {}
  q: {terminal: true}
`
	r := newRig(t, files{"app.yaml": st})
	r.do("in")
	out := r.do("out") // p.c has no arms: its parent's apply
	if out.Outcome != OutcomeTransitioned || r.sess.State() != "q" || !out.Done {
		t.Fatalf("outcome %s state %s done %v", out.Outcome, r.sess.State(), out.Done)
	}
}

func TestExitAndTerminal(t *testing.T) {
	r := newRig(t, files{"app.yaml": machine})
	out := r.do("leave")
	if !out.Done || out.Exit != "done" || r.sess.State() != "__exit__done" {
		t.Fatalf("@exit: done=%v exit=%q state=%q", out.Done, out.Exit, r.sess.State())
	}
	r2 := newRig(t, files{"app.yaml": machine})
	out = r2.do("go to=x")
	if !out.Done || out.Exit != "" || r2.sess.State() != "d" {
		t.Fatalf("terminal: done=%v exit=%q state=%q", out.Done, out.Exit, r2.sess.State())
	}
}

func TestEmitIntentAutoFire(t *testing.T) {
	r := newRig(t, files{"app.yaml": machine})
	r.do("go to=c")
	if r.sess.State() != "e" || r.sess.World()["log"] != "auto fired" {
		t.Fatalf("state %s log %v", r.sess.State(), r.sess.World()["log"])
	}
	var transitions []string
	for _, ev := range r.events("machine.transition") {
		if ev.Turn == 1 {
			transitions = append(transitions, ev.Payload["from"].(string)+">"+ev.Payload["to"].(string)+":"+ev.Payload["intent"].(string))
		}
	}
	if diff := cmp.Diff([]string{"a>c:go", "c>e:auto"}, transitions); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

func TestEmitLoopIsCapped(t *testing.T) {
	r := newRig(t, files{"app.yaml": machine})
	out := r.do("spin")
	if out.Outcome != OutcomeError {
		t.Fatalf("outcome = %s, want error from the emit cap", out.Outcome)
	}
	if n := len(r.events("machine.transition")); n != MaxEmitDepth+2 { // seed + spin + 24 hops
		t.Errorf("transitions = %d, want %d", n, MaxEmitDepth+2)
	}
}
