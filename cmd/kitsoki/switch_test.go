package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/project"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/profiles"
)

func switchPlan(t *testing.T) *profiles.Plan {
	t.Helper()
	cfg, err := project.Parse([]byte("profiles:\n  fast: {backend: openai, model: gpt-5-mini, models: [gpt-5-mini, gpt-5]}\n  slow: {backend: anthropic}\n"), ".kitsoki.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &story.Story{App: story.App{ID: "x"}, Plugins: map[string]agent.Declaration{}}
	p, err := profiles.New(cfg, st, profiles.Request{Profile: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSwitchCommands: the prompt's and the terminal UI's :provider,
// :model and :effort (one implementation, reached through
// runner.command) switch the agent, say what it is now, and record the
// switch; without a value they list what they take.
func TestSwitchCommands(t *testing.T) {
	var recorded []trace.Payload
	var out, errw bytes.Buffer
	r := &runner{out: &out, errw: &errw, switches: &switchCommands{plan: switchPlan(t), record: func(p trace.Payload) error {
		recorded = append(recorded, p)
		return nil
	}}}
	ctx := context.Background()
	for _, line := range []string{":model 2", ":effort low", ":provider slow", ":model", ":provider nope"} {
		if !r.command(ctx, line) {
			t.Errorf("%s was not taken as a command", line)
		}
	}
	want := "agent: profile fast (model gpt-5)\nagent: profile fast (model gpt-5, effort low)\nagent: profile slow\n" +
		"agent: profile slow\n:model takes any model name\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if e := errw.String(); e != "kitsoki: profile \"nope\" is not declared in .kitsoki.yaml (declared: fast, slow)\n" {
		t.Errorf("stderr: %q", e)
	}
	if len(recorded) != 3 || recorded[2].(trace.AgentSwitched).PreviousModel != "gpt-5" {
		t.Errorf("recorded %+v", recorded)
	}
	// The terminal UI's commands go through the same place.
	buf := &lineBuf{}
	r.out, r.errw = buf.writer(false), buf.writer(true)
	d := &tuiDriver{r: r, buf: buf}
	res := d.Do(ctx, ":provider fast")
	if len(res.Lines) != 1 || res.Lines[0].Text != "agent: profile fast (model gpt-5-mini)" || len(recorded) != 4 {
		t.Errorf("terminal UI: %+v", res.Lines)
	}
	if r.command(ctx, ":plugins-are-not-switches") || (&switchCommands{}).command("greet", &out, &errw) {
		t.Error("a line that is no switch was taken as one")
	}
	if !strings.Contains(r.help(), switchHelp) {
		t.Error(":help does not list the switches")
	}
}
