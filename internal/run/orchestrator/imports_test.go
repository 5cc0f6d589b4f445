package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// An imported story's emit_intent and templated targets render its own
// names; the session resolves them under the import, and entering the
// import runs world_in before the entry state's on_enter.
func TestImportRuntimeNames(t *testing.T) {
	fs := files{
		"app.yaml": `app: {id: parent}
world:
  who: {type: string, default: "Ada"}
  said: {type: string, default: ""}
intents:
  enter: {}
root: main
imports:
  kid:
    source: ./kid
    entry: a
    world_in:
      name: "{{ world.who }}"
    exits:
      out:
        to: main
        set: {said: "{{ world.kid__greeting }}"}
states:
  main:
    on:
      enter:
        - target: kid
`,
		"kid/app.yaml": `app: {id: kid}
world:
  name: {type: string, default: ""}
  next: {type: string, default: "go"}
  dest: {type: string, default: "b"}
  greeting: {type: string, default: ""}
intents:
  go: {}
  leave: {}
exits:
  out: {}
root: a
states:
  a:
    on_enter:
      - set: {greeting: "hi {{ world.name }}"}
      - emit_intent: "{{ world.next }}"
    on:
      go:
        - target: "{{ world.dest }}"
  b:
    on_enter:
      - emit_intent: leave
    on:
      leave:
        - target: "@exit:out"
`,
	}
	r := newRig(t, fs)
	out := r.do("enter")
	if out.Outcome == OutcomeError {
		t.Fatalf("enter: %v", out.Err)
	}
	if out.State != "main" {
		t.Errorf("state = %q, want main (a → b → @exit:out)", out.State)
	}
	w := r.sess.World()
	if w["kid__name"] != "Ada" || w["kid__greeting"] != "hi Ada" || w["said"] != "hi Ada" {
		t.Errorf("world: kid__name %v, kid__greeting %v, said %v", w["kid__name"], w["kid__greeting"], w["said"])
	}
	var got []string
	for _, e := range r.events("machine.transition") {
		got = append(got, e.Payload["from"].(string)+" → "+e.Payload["to"].(string)+" ("+e.Payload["intent"].(string)+")")
	}
	want := []string{" → main (__seed__)", "main → kid.a (enter)", "kid.a → kid.b (kid__go)", "kid.b → main (kid__leave)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	var entered []string
	for _, e := range r.events("machine.state_entered") {
		entered = append(entered, e.Payload["state"].(string))
	}
	if diff := cmp.Diff([]string{"main", "kid", "kid.a", "kid.b", "main"}, entered); diff != "" {
		t.Errorf("entered (-want +got):\n%s", diff)
	}
}

// An imported story's base view (views/<name>.pongo in its directory)
// reads its own world keys.
func TestImportBaseView(t *testing.T) {
	fs := files{
		"app.yaml": `app: {id: parent}
intents:
  enter: {}
root: main
imports:
  kid:
    source: ./kid
    entry: a
states:
  main:
    on:
      enter:
        - target: kid
`,
		"kid/app.yaml": `app: {id: kid}
world:
  t: {type: string, default: "theirs"}
root: a
states:
  a:
    view:
      extends: base
      blocks:
        body:
          - prose: "in {{ world.t }}"
`,
		"kid/views/base.pongo": "T={{ world.t }} {% block body %}{% endblock %}",
	}
	r := newRig(t, fs)
	out := r.do("enter")
	if out.State != "kid.a" || !strings.Contains(out.View, "T=theirs") || !strings.Contains(out.View, "in theirs") {
		t.Errorf("state %q, view %q", out.State, out.View)
	}
}

// An agent inside an import emits the imported story's own intent name
// (its prompt does not know the alias); it fires as the renamed intent.
func TestImportAgentEmitsBareIntent(t *testing.T) {
	var sess *Session
	hook := host.WithRun(func(call *host.Call) *agent.Run {
		return &agent.Run{Live: sess.LiveCall(call)}
	})
	a := scripted(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		if err := call.Run.Live.EmitIntent(ctx, "advance", nil); err != nil {
			return nil, err
		}
		return &agent.AskResponse{Submission: []byte(`"ok"`)}, nil
	})
	fs := files{
		"app.yaml": "app: {id: p}\nintents: {enter: {}}\nroot: main\nimports:\n  kid: {source: ./kid, entry: s}\nstates:\n  main:\n    on:\n      enter: [{target: kid}]\n",
		"kid/app.yaml": `app: {id: kid}
agent_plugins: {agent.x: {plugin: builtin.inprocess}}
world:
  answer: {type: string, default: ""}
intents: {advance: {hidden: true}}
root: s
states:
  s:
    on_enter:
      - invoke: host.agent.ask
        agent: agent.x
        with: {prompt: "work"}
        bind: {answer: submission}
    on:
      advance: [{target: t}]
  t: {}
`,
	}
	r := newRig(t, fs, withAgent("agent.x", a), withHostOpts(hook))
	sess = r.sess
	out := r.do("enter")
	if out.Err != nil || len(out.HostErrors) != 0 {
		t.Fatalf("errors: %v %v", out.Err, out.HostErrors)
	}
	if got := r.sess.State(); got != "kid.t" {
		t.Errorf("state = %q, want kid.t (advance → kid__advance)", got)
	}
}
