package web

import (
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// The server drives its sessions through the session API every front end
// uses (driver.Sessions): Create and Resume give it a session it holds,
// writer lock and all, until it closes it; Status looks at one it does not
// hold (a finished one); Fork, Delete and List work on the directory.

// Call is a call in flight, as the page shows it.
type Call struct {
	Handler string `json:"handler"`         // the invoke (host.agent.decide, host.run…)
	Agent   string `json:"agent,omitempty"` // the agent alias of an agent call
	Purpose string `json:"purpose,omitempty"`
}

// callOf is a dispatched call as the page shows it: an agent call names
// its agent_plugins alias (agent.claude on the built-in path).
func callOf(c *host.Call) Call {
	out := Call{Handler: c.Namespace, Purpose: c.Purpose}
	if strings.HasPrefix(c.Namespace, host.AgentNamespace) {
		out.Agent = orchestrator.DefaultRouter
		if c.Invoke != nil && c.Invoke.Agent != "" {
			out.Agent = c.Invoke.Agent
		}
	}
	return out
}

// InputError is a request the page sent that cannot be taken (400).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// IntentInfo is an allowed intent as the page offers it: a button, and a
// form of its slots in declaration order.
type IntentInfo struct {
	Name        string     `json:"name"`
	Title       string     `json:"title,omitempty"`
	Description string     `json:"description,omitempty"`
	Hidden      bool       `json:"hidden,omitempty"`
	Slots       []SlotInfo `json:"slots"`
}

// SlotInfo is one slot's form field: an enum's values in the story's
// order (a picker lists them so).
type SlotInfo struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Required    bool     `json:"required,omitempty"`
	Values      []string `json:"values,omitempty"`
	Default     string   `json:"default,omitempty"`
	Description string   `json:"description,omitempty"`
}

// pageIntents are the visible intents of the session API's status, as
// the page offers them.
func pageIntents(all []driver.IntentInfo) []IntentInfo {
	out := []IntentInfo{}
	for _, in := range all {
		if in.Hidden {
			continue
		}
		pi := IntentInfo{Name: in.Name, Title: in.Title, Description: in.Description, Slots: []SlotInfo{}}
		for _, sl := range in.Slots {
			pi.Slots = append(pi.Slots, SlotInfo{Name: sl.Name, Type: sl.Type, Required: sl.Required, Values: sl.Declared,
				Default: sl.Default, Description: sl.Description})
		}
		out = append(out, pi)
	}
	return out
}
