package orchestrator

import (
	"testing"
)

// Line numbers matter: the messages below name them.
const guardErrStory = `app: {id: guards}
intents:
  check: {}
  other: {}
  effect: {}
  enter: {}
root: review
states:
  review:
    on:
      check:
        - when: "world.ok == true"
          target: done
        - when: world.verdict.decision == 'approve'
          target: done
      "*":
        - when: "world.plan.step > 1"
          target: done
      effect:
        - target: "."
          effects:
            - say: fine
            - when: 'world.a.b'
              say: never
      enter: [{target: entered}]
  review.inner:
    on: {}
  entered:
    on_enter:
      - when: "len(world.items.x) > 0"
        say: never
  done: {terminal: true}
`

// A guard that fails to evaluate names the state, the arm (or effect) and
// where the guard is written, then the expression's own error.
func TestGuardErrorNamesWhere(t *testing.T) {
	tests := []struct {
		name, line, root, want string
	}{
		{"second arm", "check", "",
			`guard error in state review, arm 1 of on.check (app.yaml:14:17): when "world.verdict.decision == 'approve'": col 15: cannot fetch decision from <nil>`},
		{"from a child state", "check", "review.inner",
			`guard error in state review, arm 1 of on.check (app.yaml:14:17): when "world.verdict.decision == 'approve'": col 15: cannot fetch decision from <nil>`},
		{"a * arm", "other", "",
			`guard error in state review, arm 0 of on.* (app.yaml:17:17): when "world.plan.step > 1": col 12: cannot fetch step from <nil>`},
		{"an effect's when", "effect", "",
			`guard error in arm effect, effect 1 (app.yaml:23:21): when "world.a.b": col 9: cannot fetch b from <nil>`},
		{"an on_enter effect's when", "enter", "",
			`guard error in on_enter of entered, effect 0 (app.yaml:30:15): when "len(world.items.x) > 0": col 17: cannot fetch x from <nil>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []rigOpt
			if tt.root != "" {
				opts = append(opts, withRoot(tt.root))
			}
			r := newRig(t, files{"app.yaml": guardErrStory}, opts...)
			out := r.do(tt.line)
			if out.Outcome != OutcomeError {
				t.Fatalf("outcome = %s, want error", out.Outcome)
			}
			if got := out.Err.Error(); got != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
			me := r.events("machine.error")
			if len(me) != 1 || me[0].Payload["error"] != tt.want {
				t.Errorf("machine.error = %v", me)
			}
		})
	}
}
