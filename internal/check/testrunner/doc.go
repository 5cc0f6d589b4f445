// Package testrunner runs flow fixtures (cassettes-and-flows.md): it loads
// them, opens each flow's story with its host_cassette (through
// internal/run/replay) or host_handlers stubs, drives the turns and
// asserts on every one. `kitsoki test flows` and kitsokitest's RunFlows
// are built on NewRunner and RunFixtures.
//
// The cassette itself lives elsewhere: the file format and the agent
// transport in internal/agents/cassette, the host-handler role, recorder and
// from-trace conversion in internal/run/replay.
package testrunner
