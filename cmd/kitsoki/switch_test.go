package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/project"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/profiles"
	"github.com/kitsoki/kitsoki/internal/view/tui"
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
// :model and :effort (one implementation, the console's own commands as
// runStory wires them) switch the agent, say what it is now, and record
// the switch; without a value they list what they take.
func TestSwitchCommands(t *testing.T) {
	var recorded []trace.Payload
	var out, errw bytes.Buffer
	sw := &switchCommands{plan: switchPlan(t), record: func(p trace.Payload) error {
		recorded = append(recorded, p)
		return nil
	}}
	con := &driver.Console{Out: &out, Err: &errw, Extra: localCommands(nil, sw)}
	ctx := context.Background()
	for _, line := range []string{":model 2", ":effort low", ":provider slow", ":model", ":provider nope"} {
		if _, stop, turned := con.Line(ctx, line); stop || turned {
			t.Errorf("%s: stop %v, turned %v; want a command", line, stop, turned)
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
	// The terminal UI's commands go through the same console.
	d := &tui.ConsoleDriver{Console: con}
	con.Out, con.Err = d.Writer(false), d.Writer(true)
	res := d.Do(ctx, ":provider fast")
	if len(res.Lines) != 1 || res.Lines[0].Text != "agent: profile fast (model gpt-5-mini)" || len(recorded) != 4 {
		t.Errorf("terminal UI: %+v", res.Lines)
	}
	if con.Extra.Run(ctx, ":plugins-are-not-switches", &out, &errw) || (&switchCommands{}).command("greet", &out, &errw) {
		t.Error("a line that is no switch was taken as one")
	}
	if !strings.Contains(con.Help(), switchHelp) {
		t.Error(":help does not list the switches")
	}
	for _, name := range switchCommandNames {
		if !slices.Contains(con.Names(), name) {
			t.Errorf("the console's commands (completion, did-you-mean) leave out %s", name)
		}
	}
}

// TestSwitchCommandsOnTheCluster: a session on the cluster knows the
// switches by name (completion, did-you-mean) and refuses them, naming
// the command, as it does the plugin commands.
func TestSwitchCommandsOnTheCluster(t *testing.T) {
	var out, errw bytes.Buffer
	con := &driver.Console{Out: &out, Err: &errw, Extra: clusterCommands{}}
	if _, _, turned := con.Line(context.Background(), ":model gpt-5"); turned {
		t.Fatal(":model was taken as a turn")
	}
	if want := "kitsoki: :model is not available in a session on the cluster (:help lists the commands)\n"; errw.String() != want || out.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want stderr %q", out.String(), errw.String(), want)
	}
	if !slices.Contains(con.Names(), ":effort") {
		t.Errorf("cluster commands %v leave out :effort", con.Names())
	}
}
