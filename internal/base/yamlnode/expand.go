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
	c := &counter{sizes: map[*yaml.Node]int64{}, cap: 1 << 62}
	total := c.size(doc)
	physical := int64(len(c.sizes))
	if total-physical <= limit {
		return nil
	}
	e := &ExpansionError{Limit: limit, Physical: physical}
	if a := c.biggest; a != nil {
		e.Alias, e.Line, e.Column, e.Size = a.Value, a.Line, a.Column, c.biggestSize
	}
	return e
}

// counter memoises the expanded size of each node, saturating at cap.
type counter struct {
	sizes       map[*yaml.Node]int64
	cap         int64
	biggest     *yaml.Node // the alias whose anchor stands for the most
	biggestSize int64
}

func (c *counter) size(n *yaml.Node) int64 {
	if s, ok := c.sizes[n]; ok {
		return s
	}
	c.sizes[n] = c.cap // a cycle (which the parser refuses) counts as too big
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
			s = min(s+c.size(ch), c.cap)
		}
	}
	c.sizes[n] = s
	return s
}
