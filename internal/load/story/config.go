package story

import (
	"fmt"
	"sort"
	"strings"
)

// Config is an active configuration: one state the session rests in, or a
// parallel state with the configurations of its regions. A region's
// configuration is a leaf, or a parallel state nested in the region (the
// compound states between are implied by the paths).
//
// Printed, a leaf is its path and a parallel state is
// "<parallel>#<item>|<item>" with its items sorted by state path; an item
// that is itself a parallel configuration is wrapped in parentheses:
//
//	clock#clock.calendar.day1|clock.weather.dry
//	p#(p.a.q#p.a.q.x.one|p.a.q.y.one)|p.b.idle
//
// A configuration one level deep prints as it always has. Configs are
// values: code that changes one builds a new one (With).
type Config struct {
	State   string    // the leaf, or the parallel state
	Regions []*Config // a parallel state's region configurations, sorted by State; nil for a leaf
}

// Leaf is the configuration of a single state.
func Leaf(state string) *Config { return &Config{State: state} }

// Parallel builds a parallel state's configuration from its regions'.
func Parallel(state string, regions []*Config) *Config {
	rs := append([]*Config(nil), regions...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].State < rs[j].State })
	return &Config{State: state, Regions: rs}
}

// IsParallel reports whether the configuration is a parallel state's.
func (c *Config) IsParallel() bool { return len(c.Regions) > 0 }

// String prints the configuration (see Config).
func (c *Config) String() string {
	if !c.IsParallel() {
		return c.State
	}
	var b strings.Builder
	c.write(&b)
	return b.String()
}

func (c *Config) write(b *strings.Builder) {
	b.WriteString(c.State)
	b.WriteByte('#')
	for i, r := range c.Regions {
		if i > 0 {
			b.WriteByte('|')
		}
		if r.IsParallel() {
			b.WriteByte('(')
			r.write(b)
			b.WriteByte(')')
			continue
		}
		b.WriteString(r.State)
	}
}

// Leaves lists the leaves, in configuration order.
func (c *Config) Leaves() []string {
	if !c.IsParallel() {
		return []string{c.State}
	}
	var out []string
	for _, r := range c.Regions {
		out = append(out, r.Leaves()...)
	}
	return out
}

// States lists every state the configuration names: each parallel state
// (before its regions) and each leaf.
func (c *Config) States() []string {
	out := []string{c.State}
	for _, r := range c.Regions {
		out = append(out, r.States()...)
	}
	return out
}

// RegionOf is the index of the region configuration that holds path (a
// state strictly inside the parallel state c), or -1.
func (c *Config) RegionOf(path string) int {
	if !c.IsParallel() || path == c.State || !IsWithin(path, c.State) {
		return -1
	}
	region := RegionPath(c.State, path)
	for i, r := range c.Regions {
		if IsWithin(r.State, region) {
			return i
		}
	}
	return -1
}

// With is a copy of the parallel configuration c with region i replaced.
func (c *Config) With(i int, r *Config) *Config {
	rs := append([]*Config(nil), c.Regions...)
	rs[i] = r
	return Parallel(c.State, rs)
}

// RegionPath is the region of parallel state p that holds path (a state
// strictly inside p): p and the next segment of path.
func RegionPath(p, path string) string {
	rest := strings.TrimPrefix(path, p+".")
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		rest = rest[:i]
	}
	return p + "." + rest
}

// ParseConfig reads a printed configuration. It checks the text's shape
// only; CheckConfig checks it against a story.
func ParseConfig(text string) (*Config, error) {
	if !strings.ContainsAny(text, "#|()") {
		return Leaf(text), nil
	}
	p := configParser{src: text}
	c, err := p.config()
	if err == nil && p.i < len(text) {
		err = fmt.Errorf("unexpected %q at offset %d", text[p.i], p.i)
	}
	if err != nil {
		return nil, fmt.Errorf("state path %q: %w (write <parallel>#<leaf>|<leaf>, with a nested parallel configuration in parentheses)", text, err)
	}
	return c, nil
}

type configParser struct {
	src string
	i   int
}

// config reads one configuration: a path, then "#" and its items.
func (p *configParser) config() (*Config, error) {
	name := p.name()
	if name == "" {
		return nil, fmt.Errorf("a state name is missing at offset %d", p.i)
	}
	if p.i >= len(p.src) || p.src[p.i] != '#' {
		return Leaf(name), nil
	}
	p.i++
	var rs []*Config
	for {
		r, err := p.item()
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
		if p.i >= len(p.src) || p.src[p.i] != '|' {
			return Parallel(name, rs), nil
		}
		p.i++
	}
}

// item reads a region's configuration: a leaf, or "(" config ")".
func (p *configParser) item() (*Config, error) {
	if p.i >= len(p.src) || p.src[p.i] != '(' {
		name := p.name()
		if name == "" {
			return nil, fmt.Errorf("a region's state is missing at offset %d", p.i)
		}
		return Leaf(name), nil
	}
	p.i++
	c, err := p.config()
	if err != nil {
		return nil, err
	}
	if !c.IsParallel() {
		return nil, fmt.Errorf("parentheses hold a nested parallel configuration (<parallel>#...), not %q", c.State)
	}
	if p.i >= len(p.src) || p.src[p.i] != ')' {
		return nil, fmt.Errorf("a \")\" is missing at offset %d", p.i)
	}
	p.i++
	return c, nil
}

// name reads a state path up to the next delimiter.
func (p *configParser) name() string {
	start := p.i
	for p.i < len(p.src) && !strings.ContainsRune("#|()", rune(p.src[p.i])) {
		p.i++
	}
	return p.src[start:p.i]
}

// CheckConfig checks a printed state path against the story: a state, or
// a parallel configuration naming one state in each region of each
// parallel state, nested ones in parentheses.
func CheckConfig(st *Story, path string) (*Config, error) {
	c, err := ParseConfig(path)
	if err != nil {
		return nil, err
	}
	if !c.IsParallel() {
		if _, ok := st.States[path]; !ok {
			return nil, fmt.Errorf("state %q does not exist", path)
		}
		return c, nil
	}
	if err := checkParallel(st, path, c); err != nil {
		return nil, err
	}
	return c, nil
}

func checkParallel(st *Story, path string, c *Config) error {
	ps := st.States[c.State]
	if ps == nil || !ps.IsParallel() {
		return fmt.Errorf("state path %q: %q is not a parallel state", path, c.State)
	}
	if len(c.Regions) != len(ps.Children) {
		return fmt.Errorf("state path %q: name one leaf for each of the %d regions of %s", path, len(ps.Children), c.State)
	}
	seen := map[int]bool{}
	for _, r := range c.Regions {
		i := c.RegionOf(r.State)
		if _, ok := st.States[r.State]; !ok || i < 0 || seen[i] {
			return fmt.Errorf("state path %q: %q is not a state of its own region of %s", path, r.State, c.State)
		}
		seen[i] = true
		if !r.IsParallel() && st.States[r.State].IsParallel() {
			return fmt.Errorf("state path %q: %q is a parallel state; write its configuration in parentheses, (%s#<leaf>|<leaf>)", path, r.State, r.State)
		}
		if r.IsParallel() {
			if err := checkParallel(st, path, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Find is the configuration of state within c (c itself, or a nested
// parallel state's), or nil.
func (c *Config) Find(state string) *Config {
	if c.State == state {
		return c
	}
	if i := c.RegionOf(state); i >= 0 {
		return c.Regions[i].Find(state)
	}
	return nil
}

// DoneEventPrefix starts the name of the event a parallel state raises
// when it is done (every region rests in a terminal leaf, or in a nested
// parallel state that is done): "done.state.<path>". Arms under that name
// on the parallel state or an enclosing state take it.
const DoneEventPrefix = "done.state."

// DoneEvent is the done event's name for parallel state p.
func DoneEvent(p string) string { return DoneEventPrefix + p }

// IsDoneEvent reports whether an intent name is a done event's.
func IsDoneEvent(name string) bool { return strings.HasPrefix(name, DoneEventPrefix) }
