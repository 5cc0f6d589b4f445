// Command kitsoki-graphviz renders DOT as SVG or PNG with Graphviz
// compiled to WebAssembly (no system Graphviz): `kitsoki viz --format
// svg|png` runs it, DOT on stdin, the image on stdout. It is a program of
// its own so that the WebAssembly start-up cost falls on rendering only,
// not on every kitsoki command.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kitsoki/kitsoki/internal/view/viz/gvrender"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 || (args[0] != "svg" && args[0] != "png") {
		fmt.Fprintln(stderr, "usage: kitsoki-graphviz svg|png < graph.dot > image")
		return 2
	}
	dot, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintln(stderr, "kitsoki-graphviz: reading stdin:", err)
		return 1
	}
	ctx := context.Background()
	r, err := gvrender.NewRenderer(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "kitsoki-graphviz:", err)
		return 1
	}
	defer r.Close()
	b, err := r.Render(ctx, string(dot), args[0])
	if err != nil {
		fmt.Fprintln(stderr, "kitsoki-graphviz:", err)
		return 1
	}
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintln(stderr, "kitsoki-graphviz: writing:", err)
		return 1
	}
	return 0
}
