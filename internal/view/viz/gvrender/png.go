package gvrender

import (
	"bytes"
	"context"
	"fmt"

	"github.com/fogleman/gg"
	"github.com/goccy/go-graphviz"
	"github.com/goccy/go-graphviz/gvc"
	"github.com/golang/freetype/truetype"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
)

// pngEngine draws Graphviz's render calls into an image with gg. It
// replaces go-graphviz's own PNG renderer, which fills curves it should
// stroke and leaves filled shapes without their outline. Text is in the
// Go font, embedded, so a PNG does not depend on the fonts a machine has.
type pngEngine struct {
	*gvc.DefaultRenderEngine
	dc    *gg.Context
	ttf   *truetype.Font
	faces map[float64]font.Face
	edge  bool // between BeginEdge and EndEdge
	node  bool // between BeginNode and EndNode
	drawn int  // shapes drawn in the current node
}

// The filled flag the binding passes is true for every shape, so the
// engine decides: an edge's curve is stroked, and of a node's shapes only
// the first (the innermost periphery) is filled; the outer peripheries of
// a double border are outlines.

func (e *pngEngine) BeginEdge(context.Context, *gvc.Job) error { e.edge = true; return nil }
func (e *pngEngine) EndEdge(context.Context, *gvc.Job) error   { e.edge = false; return nil }
func (e *pngEngine) BeginNode(context.Context, *gvc.Job) error {
	e.node, e.drawn = true, 0
	return nil
}
func (e *pngEngine) EndNode(context.Context, *gvc.Job) error { e.node = false; return nil }

// fill says whether a node's shape is filled, counting it.
func (e *pngEngine) fill(filled bool) bool {
	if !e.node {
		return filled
	}
	e.drawn++
	return filled && e.drawn == 1
}

func newPNGPlugins(ctx context.Context) ([]graphviz.Plugin, error) {
	ttf, err := truetype.Parse(goregular.TTF)
	if err != nil {
		return nil, fmt.Errorf("parsing the Go font: %w", err)
	}
	eng := &pngEngine{DefaultRenderEngine: new(gvc.DefaultRenderEngine), ttf: ttf, faces: map[float64]font.Face{}}
	render, err := gvc.NewRenderPlugin(ctx, "png", eng)
	if err != nil {
		return nil, err
	}
	device, err := gvc.PNGDevicePlugin(ctx)
	if err != nil {
		return nil, err
	}
	return []graphviz.Plugin{render, device}, nil
}

func (e *pngEngine) x(job *gvc.Job, v float64) float64 { return job.Scale().X() * v }
func (e *pngEngine) y(job *gvc.Job, v float64) float64 { return job.Scale().Y() * v }

func (e *pngEngine) BeginPage(_ context.Context, job *gvc.Job) error {
	e.dc = gg.NewContext(int(job.Width()), int(job.Height()))
	e.dc.SetRGB(1, 1, 1)
	e.dc.Clear()
	t := job.Translation()
	e.dc.Translate(e.x(job, t.X()), e.y(job, -t.Y()))
	return nil
}

func (e *pngEngine) EndPage(_ context.Context, job *gvc.Job) error {
	var buf bytes.Buffer
	if err := e.dc.EncodePNG(&buf); err != nil {
		return err
	}
	job.SetOutputData(buf.Bytes())
	job.SetOutputDataPosition(uint(buf.Len()))
	return nil
}

func setColor(dc *gg.Context, c *gvc.Color) {
	v := c.RGBAUint()
	dc.SetRGBA(float64(v[0])/255, float64(v[1])/255, float64(v[2])/255, float64(v[3])/255)
}

// paint fills the current path (when filled) with the fill colour, then
// strokes it with the pen, as Graphviz's renderers do.
func (e *pngEngine) paint(job *gvc.Job, filled bool) {
	o := job.Object()
	if filled {
		setColor(e.dc, o.FillColor())
		e.dc.FillPreserve()
	}
	if o.Pen() == gvc.PenNone {
		e.dc.ClearPath()
		return
	}
	switch o.Pen() {
	case gvc.PenDashed:
		e.dc.SetDash(6, 4)
	case gvc.PenDotted:
		e.dc.SetDash(2, 4)
	default:
		e.dc.SetDash()
	}
	e.dc.SetLineWidth(o.PenWidth())
	setColor(e.dc, o.PenColor())
	e.dc.Stroke()
}

func (e *pngEngine) Ellipse(_ context.Context, job *gvc.Job, p []*gvc.PointFloat, filled bool) error {
	filled = e.fill(filled)
	e.dc.Push()
	defer e.dc.Pop()
	e.dc.ClearPath()
	rx, ry := e.x(job, p[1].X()-p[0].X()), e.y(job, p[1].Y()-p[0].Y())
	e.dc.DrawEllipse(e.x(job, p[0].X()), e.y(job, -p[0].Y()), rx, ry)
	e.paint(job, filled)
	return nil
}

func (e *pngEngine) Polygon(_ context.Context, job *gvc.Job, a []*gvc.PointFloat, filled bool) error {
	filled = e.fill(filled)
	e.dc.Push()
	defer e.dc.Pop()
	e.dc.ClearPath()
	e.dc.MoveTo(e.x(job, a[0].X()), e.y(job, -a[0].Y()))
	for _, p := range a[1:] {
		e.dc.LineTo(e.x(job, p.X()), e.y(job, -p.Y()))
	}
	e.dc.ClosePath()
	e.paint(job, filled)
	return nil
}

func (e *pngEngine) BezierCurve(_ context.Context, job *gvc.Job, a []*gvc.PointFloat, filled bool) error {
	filled = e.fill(filled) && !e.edge
	e.dc.Push()
	defer e.dc.Pop()
	e.dc.ClearPath()
	e.dc.MoveTo(e.x(job, a[0].X()), e.y(job, -a[0].Y()))
	for i := 1; i+2 < len(a); i += 3 {
		e.dc.CubicTo(e.x(job, a[i].X()), e.y(job, -a[i].Y()), e.x(job, a[i+1].X()), e.y(job, -a[i+1].Y()),
			e.x(job, a[i+2].X()), e.y(job, -a[i+2].Y()))
	}
	if filled {
		e.dc.ClosePath()
	}
	e.paint(job, filled)
	return nil
}

func (e *pngEngine) Polyline(_ context.Context, job *gvc.Job, a []*gvc.PointFloat) error {
	e.dc.Push()
	defer e.dc.Pop()
	e.dc.ClearPath()
	e.dc.MoveTo(e.x(job, a[0].X()), e.y(job, -a[0].Y()))
	for _, p := range a[1:] {
		e.dc.LineTo(e.x(job, p.X()), e.y(job, -p.Y()))
	}
	e.paint(job, false)
	return nil
}

func (e *pngEngine) TextSpan(_ context.Context, job *gvc.Job, p *gvc.PointFloat, span *gvc.TextSpan) error {
	e.dc.Push()
	defer e.dc.Pop()
	size := span.Font().Size() * job.Zoom()
	face := e.faces[size]
	if face == nil {
		face = truetype.NewFace(e.ttf, &truetype.Options{Size: size})
		e.faces[size] = face
	}
	e.dc.SetFontFace(face)
	setColor(e.dc, job.Object().PenColor())
	x := e.x(job, p.X())
	w, _ := e.dc.MeasureString(span.Text())
	switch span.Just() {
	case 'r':
		x -= w
	case 'l':
	default:
		x -= w / 2
	}
	y := e.y(job, p.Y()+span.YOffsetCenterLine()+span.YOffsetLayout())
	e.dc.DrawString(span.Text(), x, -y)
	return nil
}
