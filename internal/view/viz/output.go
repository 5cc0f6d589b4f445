package viz

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/supervise"
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

// RenderFunc lays DOT out and renders it as "svg" or "png".
type RenderFunc func(ctx context.Context, dot string, format Format) ([]byte, error)

// Output is the graph in format f: Mermaid or DOT text, or an SVG or PNG
// rendered by render (which the text formats do not need).
func Output(ctx context.Context, g *Graph, f Format, render RenderFunc) ([]byte, error) {
	switch f {
	case FormatMermaid:
		return []byte(Mermaid(g)), nil
	case FormatDOT:
		return []byte(DOT(g)), nil
	case FormatSVG, FormatPNG:
		if render == nil {
			return nil, errorf("rendering %s needs a renderer", f)
		}
		return render(ctx, DOT(g), f)
	}
	return nil, errorf("unknown format %q", f)
}

// HelperName is the renderer program: cmd/kitsoki-graphviz, which reads
// DOT on stdin and writes the SVG or PNG on stdout.
const HelperName = "kitsoki-graphviz"

// FindHelper locates the renderer: $KITSOKI_GRAPHVIZ, else beside the
// running kitsoki, else on PATH.
func FindHelper() (string, error) {
	if p := os.Getenv("KITSOKI_GRAPHVIZ"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", errorf("KITSOKI_GRAPHVIZ=%s: %w", p, err)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", errorf("rendering SVG or PNG needs the %s renderer beside kitsoki, on PATH or named by KITSOKI_GRAPHVIZ (make build builds bin/%s; go install ./cmd/%s); --format mermaid and dot need nothing",
		HelperName, HelperName, HelperName)
}

// HelperRender renders through the helper program at path, a child
// process supervised (and reaped) like every other kitsoki starts.
func HelperRender(path string) RenderFunc {
	return func(ctx context.Context, dot string, f Format) ([]byte, error) {
		var out, errb bytes.Buffer
		p, err := supervise.Start(supervise.Config{Name: HelperName, Path: path, Args: []string{string(f)},
			Stdin: strings.NewReader(dot), Stdout: &out, Stderr: &errb})
		if err != nil {
			return nil, errorf("starting %s: %w", path, err)
		}
		exit, err := p.Wait(ctx)
		if err != nil {
			p.Stop(context.WithoutCancel(ctx))
			return nil, errorf("%s: %w", HelperName, err)
		}
		if exit.Code() != 0 {
			msg := strings.TrimSpace(errb.String())
			if msg == "" {
				msg = exit.String()
			}
			return nil, fmt.Errorf("viz: %s: %s", HelperName, msg)
		}
		return out.Bytes(), nil
	}
}
