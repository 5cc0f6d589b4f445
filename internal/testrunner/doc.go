// Package testrunner replays recorded agent and host exchanges and runs flow
// fixtures (cassettes-and-flows.md).
//
// A Cassette is a YAML file of episodes. It plays two roles that share one
// play state: a host handler (Cassette.Handler) that answers any invoke name
// in place of the real host, and an agent transport (Cassette.Agent,
// NewCassetteAgent) that answers agent calls in place of a declared plugin.
// A Recorder writes the cassette of a live run; FromTrace turns a trace into
// one. RunFixture and Run execute flow fixtures and assert on every turn;
// RunFlows and Replay are the go test helpers built on them.
package testrunner
