package viz

import (
	"fmt"
	"strings"
	"unicode"
)

// This file is a recursive-descent parser for the Mermaid flowchart
// subset Mermaid() writes, following Mermaid's flowchart grammar for
// those productions, so the tests check the output parses (not that it
// matches a pattern):
//
//	chart     = "flowchart" dir NL { stmt NL }
//	stmt      = comment | subgraph | classDef | class | linkStyle | edge | node
//	comment   = "%%" any
//	subgraph  = "subgraph" ID [ "[" STRING "]" ] NL { stmt NL } "end"
//	classDef  = "classDef" ID styles
//	class     = "class" ID { "," ID } ID
//	linkStyle = "linkStyle" INT { "," INT } styles
//	edge      = ID arrow [ "|" STRING "|" ] ID
//	node      = ID shape
//	shape     = "[" STRING "]" | "([" STRING "])" | "((" STRING "))"
//	arrow     = "-->" | "-.->"
//	STRING    = '"' { any but '"' } '"'

type mmChart struct {
	Dir       string
	Nodes     map[string]string // id -> label
	Shapes    map[string]string // id -> "box", "stadium", "circle"
	Edges     []mmEdge
	Subgraphs map[string][]string // subgraph id -> node ids directly inside
	Titles    map[string]string   // subgraph id -> its title
	SubParent map[string]string   // subgraph id -> the subgraph it is inside ("" at the top)
	Classes   map[string][]string // class -> ids
	LinkStyle []int
}

type mmEdge struct{ From, To, Label, Arrow string }

type mmParser struct {
	lines []string
	ln    int
	s     string // rest of the current line
	chart *mmChart
}

func parseMermaid(src string) (*mmChart, error) {
	p := &mmParser{lines: strings.Split(strings.TrimRight(src, "\n"), "\n"),
		chart: &mmChart{Nodes: map[string]string{}, Shapes: map[string]string{}, Subgraphs: map[string][]string{}, Titles: map[string]string{}, SubParent: map[string]string{}, Classes: map[string][]string{}}}
	if !p.nextLine() {
		return nil, fmt.Errorf("empty chart")
	}
	if !p.keyword("flowchart") {
		return nil, p.errf("expected flowchart")
	}
	d := p.ident()
	switch d {
	case "LR", "RL", "TD", "TB", "BT":
	default:
		return nil, p.errf("bad direction %q", d)
	}
	p.chart.Dir = d
	if err := p.eol(); err != nil {
		return nil, err
	}
	if err := p.stmts("", false); err != nil {
		return nil, err
	}
	for _, e := range p.chart.Edges {
		for _, id := range []string{e.From, e.To} {
			if _, ok := p.chart.Nodes[id]; !ok {
				return nil, fmt.Errorf("edge %s->%s: node %s never declared", e.From, e.To, id)
			}
		}
	}
	return p.chart, nil
}

func (p *mmParser) errf(format string, a ...any) error {
	return fmt.Errorf("line %d: %s: at %q", p.ln, fmt.Sprintf(format, a...), p.s)
}

func (p *mmParser) nextLine() bool {
	for p.ln < len(p.lines) {
		p.s = strings.TrimSpace(p.lines[p.ln])
		p.ln++
		if p.s != "" {
			return true
		}
	}
	return false
}

func (p *mmParser) ws() { p.s = strings.TrimLeft(p.s, " ") }

func (p *mmParser) keyword(k string) bool {
	p.ws()
	if strings.HasPrefix(p.s, k) && (len(p.s) == len(k) || p.s[len(k)] == ' ') {
		p.s = p.s[len(k):]
		return true
	}
	return false
}

func (p *mmParser) lit(t string) bool {
	p.ws()
	if strings.HasPrefix(p.s, t) {
		p.s = p.s[len(t):]
		return true
	}
	return false
}

func (p *mmParser) ident() string {
	p.ws()
	i := 0
	for i < len(p.s) {
		r := rune(p.s[i])
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
			break
		}
		i++
	}
	id := p.s[:i]
	p.s = p.s[i:]
	return id
}

func (p *mmParser) str() (string, error) {
	p.ws()
	if !strings.HasPrefix(p.s, `"`) {
		return "", p.errf("expected string")
	}
	end := strings.IndexByte(p.s[1:], '"')
	if end < 0 {
		return "", p.errf("unterminated string")
	}
	v := p.s[1 : end+1]
	p.s = p.s[end+2:]
	return v, nil
}

func (p *mmParser) eol() error {
	p.ws()
	if p.s != "" {
		return p.errf("unexpected text")
	}
	return nil
}

func (p *mmParser) stmts(sub string, nested bool) error {
	for p.nextLine() {
		if strings.HasPrefix(p.s, "%%") {
			continue
		}
		if p.keyword("end") {
			if !nested {
				return p.errf("end outside a subgraph")
			}
			return p.eol()
		}
		if err := p.stmt(sub); err != nil {
			return err
		}
	}
	if nested {
		return fmt.Errorf("subgraph %s: missing end", sub)
	}
	return nil
}

func (p *mmParser) stmt(sub string) error {
	c := p.chart
	switch {
	case p.keyword("subgraph"):
		id := p.ident()
		if id == "" {
			return p.errf("subgraph without id")
		}
		if p.lit("[") {
			t, err := p.str()
			if err != nil {
				return err
			}
			if !p.lit("]") {
				return p.errf("expected ]")
			}
			c.Titles[id] = t
		}
		if err := p.eol(); err != nil {
			return err
		}
		if _, dup := c.Subgraphs[id]; dup {
			return p.errf("subgraph %s declared twice", id)
		}
		c.Subgraphs[id] = nil
		c.SubParent[id] = sub
		return p.stmts(id, true)
	case p.keyword("classDef"):
		if p.ident() == "" {
			return p.errf("classDef without name")
		}
		return p.styles()
	case p.keyword("class"):
		var ids []string
		for {
			id := p.ident()
			if id == "" {
				return p.errf("class: expected id")
			}
			ids = append(ids, id)
			if !p.lit(",") {
				break
			}
		}
		name := p.ident()
		if name == "" {
			return p.errf("class: expected class name")
		}
		c.Classes[name] = append(c.Classes[name], ids...)
		return p.eol()
	case p.keyword("linkStyle"):
		for {
			id := p.ident()
			var n int
			if _, err := fmt.Sscanf(id, "%d", &n); err != nil || fmt.Sprint(n) != id {
				return p.errf("linkStyle: expected edge number")
			}
			if n >= len(c.Edges) {
				return p.errf("linkStyle: edge %d of %d", n, len(c.Edges))
			}
			c.LinkStyle = append(c.LinkStyle, n)
			if !p.lit(",") {
				break
			}
		}
		return p.styles()
	}
	id := p.ident()
	if id == "" {
		return p.errf("expected statement")
	}
	arrow := ""
	switch {
	case p.lit("-->"):
		arrow = "-->"
	case p.lit("-.->"):
		arrow = "-.->"
	}
	if arrow != "" {
		e := mmEdge{From: id, Arrow: arrow}
		if p.lit("|") {
			l, err := p.str()
			if err != nil {
				return err
			}
			if !p.lit("|") {
				return p.errf("expected | after edge label")
			}
			e.Label = l
		}
		e.To = p.ident()
		if e.To == "" {
			return p.errf("edge without target")
		}
		c.Edges = append(c.Edges, e)
		return p.eol()
	}
	var shape, close string
	switch {
	case p.lit("(["):
		shape, close = "stadium", "])"
	case p.lit("(("):
		shape, close = "circle", "))"
	case p.lit("["):
		shape, close = "box", "]"
	default:
		return p.errf("node %s without shape", id)
	}
	l, err := p.str()
	if err != nil {
		return err
	}
	if !p.lit(close) {
		return p.errf("expected %s", close)
	}
	if _, dup := c.Nodes[id]; dup {
		return p.errf("node %s declared twice", id)
	}
	c.Nodes[id], c.Shapes[id] = l, shape
	if sub != "" {
		c.Subgraphs[sub] = append(c.Subgraphs[sub], id)
	}
	return p.eol()
}

// styles = style { "," style }, style = NAME ":" VALUE.
func (p *mmParser) styles() error {
	p.ws()
	if p.s == "" {
		return p.errf("expected styles")
	}
	for _, st := range strings.Split(p.s, ",") {
		k, v, ok := strings.Cut(st, ":")
		if !ok || k == "" || v == "" || strings.ContainsAny(st, " ;") {
			return p.errf("bad style %q", st)
		}
	}
	p.s = ""
	return nil
}
