package eval

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/routes"
)

// candidate is one cell of the matrix: what the report shows and the
// route its calls take.
type candidate struct {
	Candidate
	route *host.Route
}

// key identifies the candidate in cassettes: profile[@model][#effort].
func (c *candidate) key() string {
	k := c.Profile
	if c.route.Model != "" {
		k += "@" + c.route.Model
	}
	if c.Effort != "" {
		k += "#" + c.Effort
	}
	return k
}

// expandMatrix lists the candidates of a matrix in order: profiles as
// listed, each with its models (or its default model), each with every
// effort level (or the default effort).
func expandMatrix(st *story.Story, site *CallSite, m Matrix) ([]*candidate, error) {
	var out []*candidate
	var errs []string
	seen := map[string]bool{}
	for _, p := range m.Profiles {
		base, backend, err := routes.ProfileRoute(st, p)
		if err != nil {
			errs = append(errs, "matrix.profiles: "+err.Error())
			continue
		}
		models := m.Models[p]
		if len(models) == 0 {
			models = []string{""}
		}
		efforts := m.Effort
		if len(efforts) == 0 {
			efforts = []string{""}
		}
		for _, model := range models {
			for _, effort := range efforts {
				r := *base
				r.Model, r.Effort = model, effort
				c := &candidate{route: &r, Candidate: Candidate{
					Profile: p, Backend: backend, Provider: r.Provider,
					Model: labelModel(st, site, &r), Effort: effort,
				}}
				if seen[c.key()] {
					errs = append(errs, fmt.Sprintf("matrix lists candidate %s twice", c.Label()))
					continue
				}
				seen[c.key()] = true
				out = append(out, c)
			}
		}
	}
	for p := range m.Models {
		if !contains(m.Profiles, p) {
			errs = append(errs, fmt.Sprintf("matrix.models names profile %q, which is not in matrix.profiles", p))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// labelModel is the model a candidate reports: the one its calls run on,
// by the host's rule (the matrix's, else the provider's, the persona's or
// the declaration's, as the profile's transport takes them), else "".
func labelModel(st *story.Story, site *CallSite, r *host.Route) string {
	return host.RouteModel(st, r, st.Agents[site.Agent])
}

func contains(s []string, v string) bool { return slices.Contains(s, v) }
