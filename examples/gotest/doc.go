// Package gotest is an outside module that tests kitsoki stories with the
// public Go API only (kitsoki, kitsokitest): a recorded cassette
// replayed turn by turn, a story's flow fixtures as subtests, and a story
// whose agent and host are Go funcs. Its go.mod points at the repository
// with a replace directive; `make test` runs it.
package gotest
