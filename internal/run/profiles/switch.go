package profiles

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// The live switches.
const (
	SwitchProvider = "provider"
	SwitchModel    = "model"
	SwitchEffort   = "effort"
)

// None is the :provider argument that goes back to the story's own
// agents.
const None = "none"

// Switch applies one live switch of the session's default agent from the
// next call on: provider (a profile's name, or none for the story's own
// agents), model (a model name, or the number of one of the profile's
// models:) or effort. It returns what the trace records.
func (p *Plan) Switch(what, arg string) (trace.AgentSwitched, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return trace.AgentSwitched{}, fmt.Errorf(":%s needs a value (%s)", what, p.Options(what))
	}
	cur := p.Selection.Current()
	next := cur
	switch what {
	case SwitchProvider:
		if arg == None {
			next = host.Choice{}
			break
		}
		c, err := p.Choice(arg)
		if err != nil {
			return trace.AgentSwitched{}, err
		}
		next = c
	case SwitchModel:
		m, err := p.model(cur, arg)
		if err != nil {
			return trace.AgentSwitched{}, err
		}
		next.Model = m
	case SwitchEffort:
		if err := p.checkEffort(cur, arg); err != nil {
			return trace.AgentSwitched{}, err
		}
		next.Effort = arg
	default:
		return trace.AgentSwitched{}, fmt.Errorf("unknown switch %q (provider, model or effort)", what)
	}
	prev := p.Selection.Set(next)
	return trace.AgentSwitched{Command: ":" + what + " " + arg, Switch: what, Profile: next.Profile, Model: p.modelOf(next), Effort: next.Effort,
		PreviousProfile: prev.Profile, PreviousModel: p.modelOf(prev), PreviousEffort: prev.Effort}, nil
}

// modelOf is the model a choice's calls run on, as far as the plan knows
// it: the switched model, else the model its profile declares ("" when
// the backend's default or the story's own agent decides).
func (p *Plan) modelOf(c host.Choice) string {
	if c.Model != "" {
		return c.Model
	}
	if r, ok := p.resolved[c.Profile]; ok {
		return r.Decl.Model
	}
	return ""
}

// model reads :model's argument: a name, or the number of one of the
// current profile's models: (counting from 1, as they are listed).
func (p *Plan) model(cur host.Choice, arg string) (string, error) {
	models := p.models(cur)
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(models) {
			return "", fmt.Errorf(":model %d: the profile lists %d models (%s)", n, len(models), p.Options(SwitchModel))
		}
		return models[n-1], nil
	}
	return arg, nil
}

// checkEffort refuses an effort the current profile's efforts: does not
// list (any effort when it lists none).
func (p *Plan) checkEffort(cur host.Choice, arg string) error {
	pr := p.cfg.Profiles[cur.Profile]
	if pr == nil || len(pr.Efforts) == 0 || slices.Contains(pr.Efforts, arg) {
		return nil
	}
	return fmt.Errorf(":effort %s: profile %s offers %s", arg, cur.Profile, strings.Join(pr.Efforts, ", "))
}

func (p *Plan) models(cur host.Choice) []string {
	if pr := p.cfg.Profiles[cur.Profile]; pr != nil {
		return pr.Models
	}
	return nil
}

// Options lists what a switch can take, for messages and for :model
// without a value: the profiles (none included), the current profile's
// models, or its efforts.
func (p *Plan) Options(what string) string {
	cur := p.Selection.Current()
	switch what {
	case SwitchProvider:
		return strings.Join(append(sortedKeys(p.cfg.Profiles), None), ", ")
	case SwitchModel:
		var out []string
		for i, m := range p.models(cur) {
			out = append(out, fmt.Sprintf("%d %s", i+1, m))
		}
		if len(out) == 0 {
			return "any model name"
		}
		return strings.Join(out, ", ") + ", or any model name"
	case SwitchEffort:
		if pr := p.cfg.Profiles[cur.Profile]; pr != nil && len(pr.Efforts) > 0 {
			return strings.Join(pr.Efforts, ", ")
		}
		return "low, medium, high, xhigh, max"
	}
	return ""
}

// Describe says what the default agent is now: "profile fast (model
// claude-haiku-4-5, effort low)" or "the story's own agents".
func (p *Plan) Describe() string {
	c := p.Selection.Current()
	if c.IsZero() {
		return "the story's own agents"
	}
	var parts []string
	if m := p.modelOf(c); m != "" {
		parts = append(parts, "model "+m)
	}
	if c.Effort != "" {
		parts = append(parts, "effort "+c.Effort)
	}
	s := "the story's default agent"
	if c.Profile != "" {
		s = "profile " + c.Profile
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}
