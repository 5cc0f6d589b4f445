package trace

// The kitsoki-only kinds about a run's agents. Kitsoki's readers skip
// kinds under the kitsoki. prefix.
const (
	// KindAgentSwitched is written when the operator switches the agent
	// of a running session (:provider, :model, :effort).
	KindAgentSwitched = "kitsoki.agent.switched"
	// KindCostCapReached is written when a spending cap stops the run.
	KindCostCapReached = "kitsoki.cost_cap"
)

// AgentSwitched is kitsoki.agent.switched: what the session's default
// agent is from now on (its profile, model and effort; empty: the
// story's own), what it was, and the command that switched it (":model
// gpt-5-mini"). Switch is provider, model or effort.
type AgentSwitched struct {
	Command         string `json:"command"`
	Effort          string `json:"effort,omitempty"`
	Model           string `json:"model,omitempty"`
	PreviousEffort  string `json:"previous_effort,omitempty"`
	PreviousModel   string `json:"previous_model,omitempty"`
	PreviousProfile string `json:"previous_profile,omitempty"`
	Profile         string `json:"profile,omitempty"`
	Switch          string `json:"switch"`
}

// CostCapReached is kitsoki.cost_cap: a spending cap (the run's
// --max-cost, a profile's quota) was reached and the run stopped. CapUSD
// is the dollar cap (0 when the cap counts calls), MaxCalls the call cap.
type CostCapReached struct {
	Calls    int64   `json:"calls"`
	CapUSD   float64 `json:"cap_usd,omitempty"`
	MaxCalls int64   `json:"max_calls,omitempty"`
	Scope    string  `json:"scope"`
	SpentUSD float64 `json:"spent_usd"`
}

func (AgentSwitched) Kind() string  { return KindAgentSwitched }
func (CostCapReached) Kind() string { return KindCostCapReached }

func (p AgentSwitched) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.str("command", &p.Command)
	s.str("effort", &p.Effort)
	s.str("model", &p.Model)
	s.str("previous_effort", &p.PreviousEffort)
	s.str("previous_model", &p.PreviousModel)
	s.str("previous_profile", &p.PreviousProfile)
	s.str("profile", &p.Profile)
	s.str("switch", &p.Switch)
	if s.end(c) {
		return p, true
	}
	return nil, false
}

func (p CostCapReached) scrub(s *scrubber) (any, bool) {
	c := s.begin()
	s.float("cap_usd", p.CapUSD)
	s.str("scope", &p.Scope)
	s.float("spent_usd", p.SpentUSD)
	if s.end(c) {
		return p, true
	}
	return nil, false
}
