package main

import "testing"

// runInteractive runs the hello story at the prompt, fed from input.
func runInteractive(t *testing.T, input string) (int, string, string) {
	t.Helper()
	return runInteractiveWith(t, nil, input)
}
