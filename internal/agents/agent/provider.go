package agent

// Provider is a providers: entry: it keeps the built-in claude component but
// points it at another Anthropic-compatible backend, with its own model and
// environment (e.g. ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN). An invoke
// names one; the host resolves the name and hands the entry to the
// transport in Call.Provider.
type Provider struct {
	Name  string
	Model string
	// Effort is the reasoning effort of the calls that go through the
	// provider when neither the persona nor a route sets one.
	Effort string
	// Env holds the resolved values (${VAR} substituted at load).
	Env map[string]string
	// Secrets are the values substituted from ${VAR} references; they must
	// never be written to a trace.
	Secrets []string
}
