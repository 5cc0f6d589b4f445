package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

const overlayStory = `
app: {id: overlays}
world:
  n: {type: int, default: 0}
intents: {go: {}}
root: hall
states:
  hall:
    view: "the hall"
    on: {go: [{target: yard}]}
  yard:
    view: "the yard"
    on: {go: [{target: hall}]}
off_path:
  trigger: "/freeform"
  banner: "*** off the path ***"
  return: "/onpath"
meta_modes:
  story:
    trigger: meta
    banner: "*** meta:story ***"
    agent: story-author
    return: {intent: onpath, message: "back on the path."}
`

type echoAgent struct{ prompts []string }

func (a *echoAgent) Ask(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
	a.prompts = append(a.prompts, c.Request.Prompt)
	return &agent.AskResponse{Submission: json.RawMessage(`{"answer":"noted"}`)}, nil
}
func (a *echoAgent) Close() error { return nil }

func say(t *testing.T, r *rig, line string) *Outcome {
	t.Helper()
	out, err := r.sess.Say(context.Background(), line)
	if err != nil {
		t.Fatalf("say %q: %v", line, err)
	}
	return out
}

func TestOverlays(t *testing.T) {
	ag := &echoAgent{}
	r := newRig(t, files{"app.yaml": overlayStory}, withHostOpts(host.WithBuiltin(ag)))
	if !r.sess.IsFreeText("/freeform") {
		t.Fatal("the trigger is not taken as free text")
	}
	out := say(t, r, "/freeform")
	if r.sess.Overlay() != "off_path" || !cmp.Equal(out.Says, []string{"*** off the path ***"}) {
		t.Fatalf("open: overlay %q says %v", r.sess.Overlay(), out.Says)
	}
	if o := r.do("go"); o.Rejection == nil || o.Rejection.Code != CodeOverlayOpen ||
		o.Rejection.Message != "the story is paused while off_path is open; type /onpath to return to it" {
		t.Fatalf("typed intent while open: %+v", o.Rejection)
	}
	out = say(t, r, "is this the hall?")
	if !cmp.Equal(out.Says, []string{"noted"}) || r.sess.State() != "hall" || out.View != "" {
		t.Fatalf("answer: says %v state %s", out.Says, r.sess.State())
	}
	if p := ag.prompts[0]; !strings.Contains(p, "state: hall") || !strings.Contains(p, "view: |\n  the hall") || !strings.Contains(p, "[user]\nis this the hall?\n[/user]") {
		t.Errorf("prompt = %q", p)
	}
	say(t, r, "/onpath")
	if r.sess.Overlay() != "" {
		t.Fatalf("still open: %q", r.sess.Overlay())
	}
	r.do("go")
	out = say(t, r, "/meta")
	if r.sess.Overlay() != "story" || !cmp.Equal(out.Says, []string{"*** meta:story ***"}) {
		t.Fatalf("meta open: %q %v", r.sess.Overlay(), out.Says)
	}
	say(t, r, "make it warmer")
	out = say(t, r, "/onpath")
	if !cmp.Equal(out.Says, []string{"back on the path."}) || out.View != "the yard" {
		t.Fatalf("meta close: says %v view %q", out.Says, out.View)
	}
	say(t, r, "/meta") // persistent: the conversation resumes
	say(t, r, "and shorter")
	if p := ag.prompts[len(ag.prompts)-1]; !strings.Contains(p, "[conversation]\nuser: make it warmer\nagent: noted\n[/conversation]") {
		t.Errorf("resumed prompt = %q", p)
	}
	if a := r.story.Agents["story-author"]; a == nil || a.SystemPrompt == "" {
		t.Errorf("builtin story-author persona = %+v", a)
	}
}

// An off_path whose return: names a state enters it on the way back.
func TestOffPathReturnState(t *testing.T) {
	src := strings.Replace(overlayStory, `return: "/onpath"`, `return: yard`, 1)
	r := newRig(t, files{"app.yaml": src}, withHostOpts(host.WithBuiltin(&echoAgent{})))
	say(t, r, "/freeform")
	out := say(t, r, "/back")
	if r.sess.State() != "yard" || out.State != "yard" || r.sess.Overlay() != "" {
		t.Fatalf("state %s overlay %q", r.sess.State(), r.sess.Overlay())
	}
}

// Grouped meta modes open with /meta <group> <verb>; /meta <group> opens
// the group's default verb, and a bare /meta <verb> the story group's.
func TestGroupedMetaModes(t *testing.T) {
	const src = `
app: {id: grouped}
agents: {guide: {system_prompt: "You guide."}}
root: hall
states: {hall: {view: "the hall"}}
meta_modes:
  story.edit: {trigger: edit, group: story, default: true, agent: guide, banner: "editing"}
  story.ask: {trigger: ask, group: story, agent: guide, banner: "asking"}
  ops.ask: {trigger: ask, group: ops, agent: guide, banner: "ops asking"}
`
	r := newRig(t, files{"app.yaml": src})
	for _, tt := range []struct{ line, want string }{
		{"/meta story", "story.edit"},
		{"/meta story ask", "story.ask"},
		{"/meta ask", "story.ask"},
		{"/meta ops ask", "ops.ask"},
		{"/meta ops", ""},
		{"/ask", ""},
	} {
		got := ""
		if o := r.sess.overlayFor(tt.line); o != nil {
			got = o.Name
		}
		if got != tt.want {
			t.Errorf("%q opens %q, want %q", tt.line, got, tt.want)
		}
	}
}

// A meta mode without a banner: opens with one that names it by its
// label:.
func TestMetaModeLabelNamesTheBanner(t *testing.T) {
	const src = `
app: {id: labelled}
agents: {guide: {system_prompt: "You guide."}}
root: hall
states: {hall: {view: "the hall"}}
meta_modes:
  notes: {trigger: notes, label: "take notes", agent: guide}
`
	r := newRig(t, files{"app.yaml": src})
	out := say(t, r, "/notes")
	if got := strings.Join(out.Says, " "); got != "*** notes: take notes — type /onpath to return ***" {
		t.Errorf("banner = %q", got)
	}
}

// A meta mode with persist: false starts a new conversation each time it
// opens.
func TestMetaModeWithoutPersistStartsAfresh(t *testing.T) {
	ag := &echoAgent{}
	src := strings.Replace(overlayStory, "    agent: story-author\n", "    agent: story-author\n    persist: false\n", 1)
	r := newRig(t, files{"app.yaml": src}, withHostOpts(host.WithBuiltin(ag)))
	say(t, r, "/meta")
	say(t, r, "make it warmer")
	say(t, r, "/onpath")
	say(t, r, "/meta")
	say(t, r, "and shorter")
	if p := ag.prompts[len(ag.prompts)-1]; strings.Contains(p, "make it warmer") {
		t.Errorf("persist: false kept the conversation: %q", p)
	}
}
