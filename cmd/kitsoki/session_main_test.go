package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/kitsoki/kitsoki/internal/run/session"
)

// TestMain keeps every session the package's tests start out of the
// workspace (the repository): they go to a temporary sessions directory.
// With KITSOKI_TEST_AS_CLI=1 the test binary is kitsoki itself, so a test
// can run it as a child process and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("KITSOKI_TEST_AS_CLI") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "kitsoki-sessions-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(session.EnvDir, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
