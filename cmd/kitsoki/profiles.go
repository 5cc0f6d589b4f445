package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/profiles"
)

// agentFlags choose a run's default agent and cap its spending: --profile,
// --agent and --max-cost on kitsoki run and kitsoki eval run.
type agentFlags struct {
	profile string
	agent   string
	maxCost float64
}

func addAgentFlags(f *pflag.FlagSet, a *agentFlags) {
	f.StringVar(&a.profile, "profile", "", "answer the default agent's calls (no agent:, or agent.claude) with this .kitsoki.yaml profile")
	f.StringVar(&a.agent, "agent", "", "answer the default agent's calls with this agent_plugins alias, or a backend on its defaults (anthropic, openai, codex, copilot, claude)")
	f.Float64Var(&a.maxCost, "max-cost", 0, "stop the run once its agent calls have cost this many US dollars (0: no cap)")
}

// plan resolves the profiles of .kitsoki.yaml for st and the run's
// choice, adds the profiles' agents (and their secrets) to st, and
// returns the plan and the run's budget (nil without --max-cost).
func (a *agentFlags) plan(g *globals, st *story.Story) (*profiles.Plan, *agent.Budget, error) {
	if a.maxCost < 0 {
		return nil, nil, fmt.Errorf("--max-cost %v: want 0 (no cap) or more US dollars", a.maxCost)
	}
	p, err := profiles.New(g.project, st, profiles.Request{Profile: a.profile, Agent: a.agent})
	if err != nil {
		return nil, nil, err
	}
	p.Apply(st)
	var b *agent.Budget
	if a.maxCost > 0 {
		b = agent.NewBudget("--max-cost", "raise --max-cost", a.maxCost, 0)
	}
	return p, b, nil
}

// switchHelp documents the prompt's live switches.
const switchHelp = `:provider [profile|none]   switch the default agent   :model [name|n]   :effort [level]`

// switchCommands are the live switches of the default agent, the one
// implementation the plain prompt and the terminal UI share: :provider,
// :model and :effort change the agent from the next call on and write
// kitsoki.agent.switched into the trace; without a value they say what
// the agent is and what they take.
type switchCommands struct {
	plan   *profiles.Plan
	record func(trace.Payload) error // the run's trace (runtime.Record)
	// taken, when set, keeps the switches taken, in order, for a
	// reloaded run to take again (retake).
	taken *[][2]string
}

// retake takes the switches of the run before a :reload again, on this
// run's plan, so that a reload keeps the agent a person switched to. One
// the reloaded story no longer allows is named and dropped.
func (s *switchCommands) retake(errw io.Writer) {
	if s.taken == nil || len(*s.taken) == 0 {
		return
	}
	kept := (*s.taken)[:0]
	for _, sw := range *s.taken {
		if _, err := s.plan.Switch(sw[0], sw[1]); err != nil {
			fmt.Fprintf(errw, "kitsoki: after the reload, :%s %s no longer applies: %v\n", sw[0], sw[1], err)
			continue
		}
		kept = append(kept, sw)
	}
	*s.taken = kept
}

// switchCommandNames are the prompt's live switches.
var switchCommandNames = []string{":provider", ":model", ":effort"}

// Names, Help and Run make the switches a driver.Commands.
func (s *switchCommands) Names() []string { return switchCommandNames }
func (s *switchCommands) Help() string    { return switchHelp }
func (s *switchCommands) Run(_ context.Context, line string, out, errw io.Writer) bool {
	return s.command(line, out, errw)
}

// command runs a switch and reports whether line was one.
func (s *switchCommands) command(line string, out, errw io.Writer) bool {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return false
	}
	what, ok := strings.CutPrefix(fields[0], ":")
	if !ok || (what != profiles.SwitchProvider && what != profiles.SwitchModel && what != profiles.SwitchEffort) {
		return false
	}
	if s == nil || s.plan == nil {
		fmt.Fprintf(errw, "kitsoki: :%s: this run cannot switch its agent\n", what)
		return true
	}
	if len(fields) == 1 {
		fmt.Fprintf(out, "agent: %s\n:%s takes %s\n", s.plan.Describe(), what, s.plan.Options(what))
		return true
	}
	arg := strings.Join(fields[1:], " ")
	p, err := s.plan.Switch(what, arg)
	if err != nil {
		fmt.Fprintln(errw, "kitsoki:", err)
		return true
	}
	if s.taken != nil {
		*s.taken = append(*s.taken, [2]string{what, arg})
	}
	if err := s.record(p); err != nil {
		fmt.Fprintln(errw, "kitsoki: recording the switch in the trace:", err)
		return true
	}
	fmt.Fprintf(out, "agent: %s\n", s.plan.Describe())
	return true
}

// evalPlan applies --profile, --agent and --max-cost to an eval run: the
// .kitsoki.yaml profiles become candidates a matrix can name, a chosen
// profile or agent replaces the matrix's candidates (its models as the
// matrix lists them), and the budget caps the run.
func (af agentFlags) evalPlan(g *globals, c *eval.Checked) (*agent.Budget, error) {
	if c.Story == nil {
		return nil, nil
	}
	_, budget, err := af.plan(g, c.Story)
	if err != nil {
		return nil, err
	}
	if name := af.profile + af.agent; name != "" {
		m := &c.Dataset.Matrix
		models := m.Models[name]
		m.Profiles, m.Models = []string{name}, nil
		if len(models) > 0 {
			m.Models = map[string][]string{name: models}
		}
	}
	return budget, nil
}

// localCommands are the `:` commands of a run in this process beside the
// shared ones, one set for the prompt, the terminal UI and (refused) the
// cluster: the plugin commands, then the live agent switches.
func localCommands(plugins *pluginRuntime, switches *switchCommands) driver.Commands {
	return driver.Join(plugins, switches)
}
