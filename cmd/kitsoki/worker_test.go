package main

import (
	"net"
	"path/filepath"
	"testing"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestWorkerCommandErrors(t *testing.T) {
	addr := closedAddr(t)
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no address", []string{"worker"}, exitUsage,
			"kitsoki worker: give --temporal HOST:PORT, the Temporal cluster to take work from (make temporal-dev serves 127.0.0.1:7233)\n"},
		{"no stories dir", []string{"worker", "--temporal", addr, "--stories", missing}, exitFailure,
			"kitsoki worker: --stories " + missing + ": not a directory; pass the directory the sessions' story paths are relative to\n"},
		{"unreachable", []string{"worker", "--temporal", addr, "--stories", "../../stories"}, exitFailure,
			"kitsoki: cannot reach the Temporal server at " + addr + `: failed reaching server: connection error: desc = "transport: Error while dialing: dial tcp ` + addr +
				`: connect: connection refused"; start one with ` + "`make temporal-dev`" + ` (127.0.0.1:7233) or pass --temporal HOST:PORT of a running cluster` + "\n"},
		{"bad cassette", []string{"worker", "--temporal", addr, "--stories", "../../stories", "--cassette", missing}, exitFailure,
			"kitsoki worker: --cassette: cassette: \"" + missing + "\": open " + missing + ": no such file or directory\n"},
		{"arguments", []string{"worker", "extra"}, exitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			if tc.stderr != "" && errs != tc.stderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", errs, tc.stderr)
			}
		})
	}
}
