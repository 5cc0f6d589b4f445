package eval

import "github.com/kitsoki/kitsoki/internal/run/routes"

// The call-site walk, the hashes and profile routes live in internal/run/routes,
// with pin resolution; eval measures what they name.
type (
	// CallSite is a host.agent.* invoke an eval can target (routes.CallSite).
	CallSite = routes.CallSite
	// Hashes are the four fingerprints a report records of what it
	// measured (routes.Hashes).
	Hashes = routes.Hashes
)
