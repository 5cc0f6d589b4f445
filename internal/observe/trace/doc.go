// Package trace writes and reads kitsoki's session trace: one JSONL file per
// session, a session.header line followed by one event per line.
//
// The format is specified in the project's trace-format spec and described in
// docs/tracing/trace-format.md. This package owns everything about the file:
// the writer (advisory lock, one write call per line, fsync per turn,
// payload checks, secret redaction), the in-memory sink used by tests and the
// flow runner, the reader with its read rules, the event kind names and the
// call_id formula. It knows nothing about the orchestrator: callers hand it
// events and it decides seq, ts and the bytes on disk.
package trace
