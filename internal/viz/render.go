package viz

import (
	"bytes"
	"context"
	"fmt"

	"github.com/goccy/go-graphviz"
)

// Format is an output format of kitsoki viz.
type Format string

const (
	FormatMermaid Format = "mermaid"
	FormatDOT     Format = "dot"
	FormatSVG     Format = "svg"
	FormatPNG     Format = "png"
)

// Formats lists the formats, for help and error messages.
func Formats() []Format { return []Format{FormatMermaid, FormatDOT, FormatSVG, FormatPNG} }

// Renderer lays out DOT and renders it with Graphviz compiled to
// WebAssembly (github.com/goccy/go-graphviz): no system Graphviz; PNGs
// are drawn by pngEngine. One
// Renderer holds one instance; Close releases it.
type Renderer struct {
	gv *graphviz.Graphviz
}

// NewRenderer starts the Graphviz instance.
func NewRenderer(ctx context.Context) (*Renderer, error) {
	plugins, err := newPNGPlugins(ctx)
	if err != nil {
		return nil, errorf("starting graphviz: %w", err)
	}
	gv, err := graphviz.NewWithPlugins(ctx, plugins...)
	if err != nil {
		return nil, errorf("starting graphviz: %w", err)
	}
	return &Renderer{gv: gv}, nil
}

// Close releases the instance.
func (r *Renderer) Close() error { return r.gv.Close() }

// Render parses DOT source and renders it as SVG or PNG.
func (r *Renderer) Render(ctx context.Context, dot string, f Format) ([]byte, error) {
	var gf graphviz.Format
	switch f {
	case FormatSVG:
		gf = graphviz.SVG
	case FormatPNG:
		gf = graphviz.PNG
	default:
		return nil, errorf("cannot render format %q (svg or png)", f)
	}
	g, err := graphviz.ParseBytes([]byte(dot))
	if err != nil {
		return nil, errorf("parsing DOT: %w", err)
	}
	defer g.Close()
	var buf bytes.Buffer
	if err := r.gv.Render(ctx, g, gf, &buf); err != nil {
		return nil, errorf("rendering %s: %w", f, err)
	}
	return buf.Bytes(), nil
}

// Output is the graph in format f: Mermaid or DOT text, or a rendered
// SVG or PNG (through r, which may be nil for the text formats).
func Output(ctx context.Context, r *Renderer, g *Graph, f Format) ([]byte, error) {
	switch f {
	case FormatMermaid:
		return []byte(Mermaid(g)), nil
	case FormatDOT:
		return []byte(DOT(g)), nil
	case FormatSVG, FormatPNG:
		if r == nil {
			return nil, fmt.Errorf("viz: rendering %s needs a Renderer", f)
		}
		return r.Render(ctx, DOT(g), f)
	}
	return nil, errorf("unknown format %q", f)
}
