package project

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
)

// Profile is one named agent profile: which backend answers a run's
// default agent, on which model and effort, with what environment and
// spending cap. profiles: is kitsoki's block and harness_profiles:
// Kitsoki's; both read the same keys.
type Profile struct {
	Name string
	// Block is the block it came from: profiles or harness_profiles.
	Block   string
	Backend string // a plugin type, e.g. builtin.anthropic
	Model   string
	// Models are the models :model offers (Kitsoki's picker list); any
	// model may still be named.
	Models  []string
	Effort  string
	Efforts []string
	// Env holds the values as written: ${VAR} is resolved when the
	// profile is used (Resolve), so a profile whose variables are not
	// set fails only when chosen.
	Env       map[string]string
	BaseURL   string
	APIKeyEnv string
	API       string
	Endpoint  string // builtin.local_llm's server
	Command   string
	Args      []string
	Sandbox   string
	Approval  string
	Quota     *agent.Quota
	Pricing   *agent.Pricing

	// keys are the keys given and where (a local file's replace a shared
	// file's one by one).
	keys map[string]Pos
}

// Pos is a place in a config file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// profileKeys are a profile's keys.
var profileKeys = []string{"backend", "model", "models", "effort", "efforts", "env", "base_url", "api_key_env", "api",
	"endpoint", "command", "args", "sandbox", "approval", "quota", "pricing", "models_endpoint"}

// backends maps a profile's backend: to a plugin type: Kitsoki's names
// (claude, codex) and ours.
var backends = map[string]string{
	"claude": agent.PluginClaudeCLI, "claude_cli": agent.PluginClaudeCLI,
	"anthropic": agent.PluginAnthropic, "openai": agent.PluginOpenAI,
	"codex": agent.PluginCodexCLI, "codex_cli": agent.PluginCodexCLI,
	"copilot": agent.PluginCopilotCLI, "copilot_cli": agent.PluginCopilotCLI,
	"local_llm": agent.PluginLocalLLM,
}

// Backend is the plugin type of a backend name (a short name or a
// builtin.* type); ok is false for none.
func Backend(name string) (string, bool) {
	if t, ok := backends[name]; ok {
		return t, true
	}
	for _, t := range backends {
		if t == name {
			return t, true
		}
	}
	return "", false
}

// BackendNames lists the short backend names, sorted.
func BackendNames() []string {
	out := make([]string, 0, len(backends))
	for k := range backends {
		if !strings.HasSuffix(k, "_cli") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// profiles reads a profiles: or harness_profiles: block into cfg.
func (p *parser) profiles(cfg *Config, block string, n *yaml.Node) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.bad(n, block, "%s must be a mapping of profile names to profiles (backend:, model:, ...)", block)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := block + "." + k.Value
		if _, dup := cfg.Profiles[k.Value]; dup {
			p.bad(k, path, "profile %q is declared twice (once under profiles:, once under harness_profiles:); keep one", k.Value)
			continue
		}
		if pr := p.profile(k.Value, block, v); pr != nil {
			if cfg.Profiles == nil {
				cfg.Profiles = map[string]*Profile{}
			}
			cfg.Profiles[k.Value] = pr
		}
	}
}

// profile reads one profile's keys.
func (p *parser) profile(name, block string, n *yaml.Node) *Profile {
	path := block + "." + name
	if n.Kind != yaml.MappingNode {
		p.bad(n, path, "a profile must be a mapping (backend:, model:, effort:, env:, quota:, ...)")
		return nil
	}
	pr := &Profile{Name: name, Block: block, keys: map[string]Pos{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := path + "." + k.Value
		if !slices.Contains(profileKeys, k.Value) {
			hint := ""
			if best := nearmiss.Closest(k.Value, profileKeys, 2); best != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", best)
			}
			p.bad(k, kp, "unknown key %q%s (known: %s)", k.Value, hint, strings.Join(profileKeys, ", "))
			continue
		}
		pr.keys[k.Value] = Pos{File: p.file, Line: v.Line, Col: v.Column}
		p.profileKey(pr, k.Value, kp, v)
	}
	return pr
}

// profileKey reads one key of a profile.
func (p *parser) profileKey(pr *Profile, key, path string, v *yaml.Node) {
	str := func(dst *string) { *dst = p.scalar(v, path) }
	switch key {
	case "backend":
		str(&pr.Backend)
	case "model":
		str(&pr.Model)
	case "effort":
		str(&pr.Effort)
	case "base_url":
		str(&pr.BaseURL)
	case "api_key_env":
		str(&pr.APIKeyEnv)
	case "api":
		str(&pr.API)
	case "endpoint":
		str(&pr.Endpoint)
	case "command":
		str(&pr.Command)
	case "sandbox":
		str(&pr.Sandbox)
	case "approval":
		str(&pr.Approval)
	case "models":
		pr.Models = p.list(v, path)
	case "efforts":
		pr.Efforts = p.list(v, path)
	case "args":
		pr.Args = p.list(v, path)
	case "env":
		pr.Env = p.strMap(v, path)
	case "quota":
		pr.Quota = p.quota(v, path)
	case "pricing":
		pr.Pricing = p.pricing(v, path)
	case "models_endpoint":
		p.bad(v, path, "models_endpoint: kitsoki does not fetch a provider's model list; name the models :model offers under models:")
	}
}

// check reports what is wrong with a profile before any run uses it: no
// backend, one kitsoki does not know, a key its backend does not take
// (which would be ignored), or a mode its backend does not know.
func (pr *Profile) check() *Error {
	where := pr.Block + "." + pr.Name
	pos, ok := pr.keys["backend"]
	if !ok {
		return &Error{File: pr.file(), Path: where, Msg: fmt.Sprintf("the profile names no backend: (one of %s)", strings.Join(BackendNames(), ", "))}
	}
	typ, ok := Backend(pr.Backend)
	if !ok {
		return &Error{File: pos.File, Line: pos.Line, Col: pos.Col, Path: where + ".backend",
			Msg: fmt.Sprintf("unknown backend %q (known: %s)", pr.Backend, strings.Join(BackendNames(), ", "))}
	}
	at := func(key, msg string) *Error {
		p := pr.keys[key]
		return &Error{File: p.File, Line: p.Line, Col: p.Col, Path: where + "." + key, Msg: msg}
	}
	for _, key := range sortedKeys(pr.keys) {
		if types := profileKeyTypes(key); types != nil && !slices.Contains(types, typ) {
			return at(key, fmt.Sprintf("%s: does not apply to backend %s (%s); it is a key of %s; remove it", key, pr.Backend, typ, strings.Join(types, ", ")))
		}
	}
	for key, val := range map[string]string{"api": pr.API, "sandbox": pr.Sandbox, "approval": pr.Approval} {
		if allowed := agent.BackendValues(typ, key); val != "" && allowed != nil && !slices.Contains(allowed, val) {
			return at(key, fmt.Sprintf("%s %q: backend %s takes %s", key, val, pr.Backend, strings.Join(allowed, ", ")))
		}
	}
	return nil
}

// profileKeyTypes is the plugin types a profile's key applies to; nil
// for a key every backend takes. A claude profile hands the story's
// claude agent its model, effort and env only.
func profileKeyTypes(key string) []string {
	switch key {
	case "effort":
		return append([]string{agent.PluginClaudeCLI}, agent.BackendKeyTypes[key]...)
	case "base_url", "api", "sandbox", "approval", "pricing":
		return agent.BackendKeyTypes[key]
	case "api_key_env":
		return []string{agent.PluginAnthropic, agent.PluginOpenAI, agent.PluginCodexCLI, agent.PluginCopilotCLI, agent.PluginLocalLLM}
	case "endpoint":
		return []string{agent.PluginLocalLLM}
	case "command", "args":
		return []string{agent.PluginCodexCLI, agent.PluginCopilotCLI}
	}
	return nil
}

// file is the file the profile was read from.
func (pr *Profile) file() string {
	for _, k := range sortedKeys(pr.keys) {
		return pr.keys[k].File
	}
	return File
}

// Resolved is a profile ready to use: its declaration, its environment
// resolved, and the values substituted from ${VAR}.
type Resolved struct {
	Decl    agent.Declaration
	Secrets []string
}

// Alias is the registry alias of a profile's agent.
func Alias(name string) string { return "profile." + name }

// Resolve checks the profile and turns it into the declaration of its
// agent, resolving ${VAR} in env: through lookup. dir is the story
// directory (the agent's working directory).
func (pr *Profile) Resolve(dir string, lookup func(string) (string, bool)) (Resolved, error) {
	where := pr.Block + "." + pr.Name
	at := func(key string) string {
		if pos, ok := pr.keys[key]; ok {
			return pos.String() + ": " + where + "." + key + ": "
		}
		return where + ": "
	}
	typ, ok := Backend(pr.Backend)
	switch {
	case pr.Backend == "":
		return Resolved{}, fmt.Errorf("%sthe profile names no backend: (one of %s)", at("backend"), strings.Join(BackendNames(), ", "))
	case !ok:
		return Resolved{}, fmt.Errorf("%sunknown backend %q (known: %s)", at("backend"), pr.Backend, strings.Join(BackendNames(), ", "))
	}
	d := agent.Declaration{Alias: Alias(pr.Name), Plugin: typ, Model: pr.Model, Effort: pr.Effort, BaseURL: pr.BaseURL,
		APIKeyEnv: pr.APIKeyEnv, API: pr.API, Endpoint: pr.Endpoint, Command: pr.Command, Args: pr.Args, Sandbox: pr.Sandbox,
		Approval: pr.Approval, Quota: pr.Quota, Pricing: pr.Pricing, Enabled: true, Dir: dir, Tool: "ask",
		Source: ".kitsoki.yaml " + where}
	var secrets []string
	for _, k := range sortedKeys(pr.Env) {
		v, err := interpolate(pr.Env[k], lookup, &secrets)
		if err != nil {
			return Resolved{}, fmt.Errorf("%s%v (export it, or choose another profile)", at("env"), err)
		}
		if d.Env == nil {
			d.Env = map[string]string{}
		}
		d.Env[k] = v
	}
	if typ == agent.PluginLocalLLM && d.Model == "" && d.Endpoint == "" {
		return Resolved{}, fmt.Errorf("%sa local_llm profile needs model: (a managed model) or endpoint: (a server someone runs)", at("backend"))
	}
	return Resolved{Decl: d, Secrets: secrets}, nil
}

// interpolate substitutes ${NAME} references in s.
func interpolate(s string, lookup func(string) (string, bool), secrets *[]string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ reference (missing })")
		}
		name := s[i+2 : i+j]
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("env var %s is not set", name)
		}
		b.WriteString(v)
		if !slices.Contains(*secrets, v) {
			*secrets = append(*secrets, v)
		}
		s = s[i+j+1:]
	}
}

// merge lays a local file's profile over the shared file's one: every key
// the local one gives replaces the shared one's.
func (pr *Profile) merge(local *Profile) {
	for key := range local.keys {
		pr.keys[key] = local.keys[key]
		switch key {
		case "backend":
			pr.Backend = local.Backend
		case "model":
			pr.Model = local.Model
		case "models":
			pr.Models = local.Models
		case "effort":
			pr.Effort = local.Effort
		case "efforts":
			pr.Efforts = local.Efforts
		case "env":
			pr.Env = local.Env
		case "base_url":
			pr.BaseURL = local.BaseURL
		case "api_key_env":
			pr.APIKeyEnv = local.APIKeyEnv
		case "api":
			pr.API = local.API
		case "endpoint":
			pr.Endpoint = local.Endpoint
		case "command":
			pr.Command = local.Command
		case "args":
			pr.Args = local.Args
		case "sandbox":
			pr.Sandbox = local.Sandbox
		case "approval":
			pr.Approval = local.Approval
		case "quota":
			pr.Quota = local.Quota
		case "pricing":
			pr.Pricing = local.Pricing
		}
	}
}

// quota reads quota: {max_cost_usd, max_calls}.
func (p *parser) quota(n *yaml.Node, path string) *agent.Quota {
	q := &agent.Quota{}
	p.fields(n, path, []string{"max_cost_usd", "max_calls"}, func(key string, v *yaml.Node) {
		switch key {
		case "max_cost_usd":
			q.MaxCostUSD = p.number(v, path+"."+key, false)
		case "max_calls":
			q.MaxCalls = int(p.number(v, path+"."+key, true))
		}
	})
	return q
}

// pricing reads pricing: {input_per_mtok, output_per_mtok, ...}.
func (p *parser) pricing(n *yaml.Node, path string) *agent.Pricing {
	pr := &agent.Pricing{}
	p.fields(n, path, []string{"input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok"}, func(key string, v *yaml.Node) {
		dst := map[string]*float64{"input_per_mtok": &pr.InputPerMTok, "output_per_mtok": &pr.OutputPerMTok,
			"cache_read_per_mtok": &pr.CacheReadPerMTok, "cache_write_per_mtok": &pr.CacheWritePerMTok}[key]
		*dst = p.number(v, path+"."+key, false)
	})
	return pr
}

// fields walks a mapping of known keys.
func (p *parser) fields(n *yaml.Node, path string, keys []string, fn func(key string, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.bad(n, path, "%s must be a mapping of %s", path, strings.Join(keys, ", "))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(keys, k.Value) {
			p.bad(k, path+"."+k.Value, "unknown key %q (known: %s)", k.Value, strings.Join(keys, ", "))
			continue
		}
		fn(k.Value, v)
	}
}

// number reads a number of 0 or more (a whole one when integer).
func (p *parser) number(n *yaml.Node, path string, integer bool) float64 {
	f, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || err != nil || f < 0 || (integer && n.Tag != "!!int") {
		want := "a number, 0 or more"
		if integer {
			want = "a whole number, 0 or more"
		}
		p.bad(n, path, "%s must be %s", path, want)
		return 0
	}
	return f
}

// scalar reads a string.
func (p *parser) scalar(n *yaml.Node, path string) string {
	if n.Kind != yaml.ScalarNode {
		p.bad(n, path, "%s must be a string", path)
		return ""
	}
	return n.Value
}

// list reads a list of strings (a single string is one).
func (p *parser) list(n *yaml.Node, path string) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		p.bad(n, path, "%s must be a list of strings", path)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, it := range n.Content {
		out = append(out, p.scalar(it, fmt.Sprintf("%s[%d]", path, i)))
	}
	return out
}

// strMap reads a mapping of strings.
func (p *parser) strMap(n *yaml.Node, path string) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.bad(n, path, "%s must be a mapping of names to values", path)
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		out[n.Content[i].Value] = p.scalar(n.Content[i+1], path+"."+n.Content[i].Value)
	}
	return out
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
