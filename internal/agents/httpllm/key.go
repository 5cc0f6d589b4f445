package httpllm

import "github.com/kitsoki/kitsoki/internal/agents/agent"

// Key finds an agent's API key: the variable its api_key_env: names,
// else def; its value from the declaration's env: first, then from the
// process environment through lookup. value is "" when it is unset or
// empty.
func Key(d agent.Declaration, def string, lookup func(string) (string, bool)) (name, value string) {
	name = d.APIKeyEnv
	if name == "" {
		name = def
	}
	if name == "" {
		return "", ""
	}
	if v, ok := d.Env[name]; ok && v != "" {
		return name, v
	}
	if lookup != nil {
		if v, ok := lookup(name); ok {
			return name, v
		}
	}
	return name, ""
}
