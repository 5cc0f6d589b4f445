// Command echo-go is an example kitsoki subprocess plugin: the echo agent
// served over JSON-RPC on stdin/stdout with the Go SDK. See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/plugin"
)

func main() {
	if err := plugin.Serve(echo.Agent{}); err != nil {
		fmt.Fprintln(os.Stderr, "echo-go:", err)
		os.Exit(1)
	}
}
