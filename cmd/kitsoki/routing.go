package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// semanticRoutingEnv forces the synonym and template tiers on (1, true,
// on) or off (0, false, off) when --semantic-routing is not given.
const semanticRoutingEnv = "KITSOKI_SEMANTIC_ROUTING"

// routingFlags are the flags that shape free-text routing, shared by
// `kitsoki run` and `kitsoki test intents`.
type routingFlags struct {
	semantic      bool
	router        string
	minConfidence float64
}

func addRoutingFlags(cmd *cobra.Command, rf *routingFlags) {
	f := cmd.Flags()
	f.BoolVar(&rf.semantic, "semantic-routing", false, "route free text through intents' synonyms and slot templates too (default: the story's routing.enabled; env "+semanticRoutingEnv+")")
	f.StringVar(&rf.router, "router", "", "agent_plugins alias of the router agent for free text (default: the story's routing.agent, else agent.claude)")
	f.Float64Var(&rf.minConfidence, "min-confidence", orchestrator.DefaultMinConfidence, "the router's confidence bar; below it the user is asked to rephrase (default: the story's routing.min_confidence, else 0.5)")
}

// config turns the flags (and KITSOKI_SEMANTIC_ROUTING) into the session's
// routing, checking --router names a declared agent and --min-confidence
// is from 0 to 1.
func (rf *routingFlags) config(cmd *cobra.Command, st *story.Story) (orchestrator.RoutingConfig, error) {
	var c orchestrator.RoutingConfig
	f := cmd.Flags()
	if f.Changed("semantic-routing") {
		v := rf.semantic
		c.Semantic = &v
	} else if env, ok := os.LookupEnv(semanticRoutingEnv); ok && strings.TrimSpace(env) != "" {
		switch strings.ToLower(strings.TrimSpace(env)) {
		case "1", "true", "on", "yes":
			v := true
			c.Semantic = &v
		case "0", "false", "off", "no":
			v := false
			c.Semantic = &v
		default:
			return c, fmt.Errorf("%s=%q: want 1/true/on or 0/false/off", semanticRoutingEnv, env)
		}
	}
	if rf.router != "" {
		if _, ok := st.Plugins[rf.router]; !ok {
			return c, fmt.Errorf("--router %q is not declared in the story's agent_plugins (declared: %s)", rf.router, strings.Join(slices.Sorted(maps.Keys(st.Plugins)), ", "))
		}
		c.Router = rf.router
	}
	if f.Changed("min-confidence") {
		if rf.minConfidence < 0 || rf.minConfidence > 1 {
			return c, fmt.Errorf("--min-confidence %v: want a number from 0 to 1", rf.minConfidence)
		}
		v := rf.minConfidence
		c.MinConfidence = &v
	}
	return c, nil
}
