// Package gvrender lays out and renders DOT with Graphviz compiled to
// WebAssembly (github.com/goccy/go-graphviz), no system Graphviz needed.
//
// It lives apart from internal/view/viz, and only the kitsoki-graphviz helper
// (and tests) import it: go-graphviz compiles its WebAssembly module in a
// package init, which would add a third of a second, 16 MB of memory and a
// cache folder in the temporary directory to every kitsoki command.
package gvrender

import (
	"bytes"
	"context"
	"fmt"

	"github.com/goccy/go-graphviz"
)

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

// Render parses DOT source and renders it as "svg" or "png".
func (r *Renderer) Render(ctx context.Context, dot string, f string) ([]byte, error) {
	var gf graphviz.Format
	switch f {
	case "svg":
		gf = graphviz.SVG
	case "png":
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

func errorf(format string, args ...any) error { return fmt.Errorf("graphviz: "+format, args...) }
