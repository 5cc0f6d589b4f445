// Package temporal holds kitsoki's tests against a real Temporal server:
// the Temporal CLI's dev server, started by the tests on a loopback port.
// It is a module of its own so that nothing the real-server tests need
// enters the main module; `make test-temporal` installs the pinned CLI
// (scripts/setup-temporal.sh) and runs them.
package temporal
