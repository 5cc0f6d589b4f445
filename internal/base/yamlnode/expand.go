package yamlnode

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MaxAliasNodes is the most nodes the aliases of one YAML document a user
// gives kitsoki (a story file or include, a flow fixture, a cassette, a
// dataset, a sidecar, an MCP input) may stand for: every *alias counts as
// a copy of everything its anchor holds, aliases inside it included. The
// nodes written in a file are bounded by its size (workspace.MaxFileSize);
// aliases multiply them, and a kilobyte whose anchors nest ten deep, ten
// aliases each, stands for ten billion nodes. The largest documents of the
// Kitsoki corpus use aliases for a few hundred nodes.
const MaxAliasNodes = 100_000

// ExpansionError is a document whose aliases stand for more than
// MaxAliasNodes nodes.
type ExpansionError struct {
	Limit    int64  // the bound that was passed
	Physical int64  // the nodes written in the document
	Alias    string // the anchor name of the alias that stands for the most
	Line     int    // where that alias is
	Column   int
	Size     int64 // how many nodes that alias stands for (capped just over Limit)
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("line %d:%d: %s", e.Line, e.Column, e.Reason())
}

// Reason is the error's text without its position.
func (e *ExpansionError) Reason() string {
	return fmt.Sprintf("YAML aliases make this document too large: they stand for more than %d nodes "+
		"(the limit) on top of the %d written, and *%s here alone stands for %d; an alias nested in an anchor "+
		"is copied wherever that anchor is, so the count multiplies: write the repeated part out once, or "+
		"reference nested anchors from fewer places",
		e.Limit, e.Physical, e.Alias, e.Size)
}

// CheckExpansion reports an *ExpansionError when the aliases of doc stand
// for more than limit nodes (MaxAliasNodes when limit is 0). It visits each
// written node once, whatever the aliases multiply, so it costs about what
// the parse did.
func CheckExpansion(doc *yaml.Node, limit int64) error {
	if doc == nil {
		return nil
	}
	if limit <= 0 {
		limit = MaxAliasNodes
	}
	if !hasAlias(doc) {
		return nil // the common case: nothing to expand, nothing allocated
	}
	c := &counter{anchored: map[*yaml.Node]int64{}, cap: 1 << 62}
	total := c.size(doc)
	if total-c.physical <= limit {
		return nil
	}
	e := &ExpansionError{Limit: limit, Physical: c.physical}
	if a := c.biggest; a != nil {
		e.Alias, e.Line, e.Column, e.Size = a.Value, a.Line, a.Column, c.biggestSize
	}
	return e
}

// hasAlias reports whether the tree under n holds an alias.
func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	for _, ch := range n.Content {
		if hasAlias(ch) {
			return true
		}
	}
	return false
}

// counter works out expanded sizes, saturating at cap. Only an anchored
// node can be reached twice (through its aliases), so only those sizes
// are kept: every written node is visited once.
type counter struct {
	anchored    map[*yaml.Node]int64
	physical    int64 // written nodes visited
	cap         int64
	biggest     *yaml.Node // the alias whose anchor stands for the most
	biggestSize int64
}

func (c *counter) size(n *yaml.Node) int64 {
	if n.Anchor != "" {
		if s, ok := c.anchored[n]; ok {
			return s
		}
		c.anchored[n] = c.cap // a cycle (which the parser refuses) counts as too big
	}
	c.physical++
	var s int64
	if n.Kind == yaml.AliasNode {
		if n.Alias != nil {
			s = c.size(n.Alias)
		}
		if c.biggest == nil || s > c.biggestSize {
			c.biggest, c.biggestSize = n, s
		}
	} else {
		s = 1
		for _, ch := range n.Content {
			s = c.add(s, c.size(ch))
		}
	}
	if n.Anchor != "" {
		c.anchored[n] = s
	}
	return s
}

// add is a+b saturating at cap: both are at most cap, and two sizes at
// the cap would overflow int64 if summed.
func (c *counter) add(a, b int64) int64 {
	if b > c.cap-a {
		return c.cap
	}
	return a + b
}
