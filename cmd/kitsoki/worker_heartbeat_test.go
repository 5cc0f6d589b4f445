package main

import "testing"

func TestWorkerHeartbeatTimeoutMustBePositive(t *testing.T) {
	code, out, errs := runCLI(t, "", "worker", "--temporal", closedAddr(t), "--heartbeat-timeout", "0s")
	want := "kitsoki worker: --heartbeat-timeout must be longer than zero, got 0s (default 10s)\n"
	if code != exitUsage || errs != want {
		t.Errorf("exit %d, stderr %q, stdout %q\nwant exit %d, stderr %q", code, errs, out, exitUsage, want)
	}
}
