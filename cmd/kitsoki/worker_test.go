package main

import (
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
	for _, tc := range []cliCase{
		{"no address", []string{"worker"}, exitUsage,
			"kitsoki worker: give --temporal HOST:PORT, the Temporal cluster to take work from (make temporal-dev serves 127.0.0.1:7233)\n"},
		{"no stories dir", []string{"worker", "--temporal", addr, "--stories", missing}, exitFailure,
			"kitsoki worker: --stories " + missing + ": not a directory; pass the directory the sessions' story paths are relative to\n"},
		{"unreachable", []string{"worker", "--temporal", addr, "--stories", "../../stories"}, exitFailure,
			unreachable(addr)},
		{"bad cassette", []string{"worker", "--temporal", addr, "--stories", "../../stories", "--cassette", missing}, exitFailure,
			"kitsoki worker: --cassette: cassette: \"" + missing + "\": open " + missing + ": no such file or directory\n"},
		{"arguments", []string{"worker", "extra"}, exitUsage, ""},
	} {
		t.Run(tc.name, tc.check)
	}
}

// cliCase is one command line, the exit code it must give and, when not
// empty, its whole stderr.
type cliCase struct {
	name   string
	args   []string
	code   int
	stderr string
}

func (tc cliCase) check(t *testing.T) {
	code, out, errs := runCLI(t, "", tc.args...)
	if code != tc.code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
	}
	if tc.stderr != "" && errs != tc.stderr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs, tc.stderr)
	}
}

// unreachable is the error for a Temporal server that is not listening at
// addr.
func unreachable(addr string) string {
	return "kitsoki: cannot reach the Temporal server at " + addr + `: failed reaching server: connection error: desc = "transport: Error while dialing: dial tcp ` + addr +
		`: connect: connection refused"; start one with ` + "`make temporal-dev`" + ` (127.0.0.1:7233) or pass --temporal HOST:PORT of a running cluster` + "\n"
}

func TestRunTemporalCommandErrors(t *testing.T) {
	addr := closedAddr(t)
	stories := t.TempDir()
	sessionsNowhere := filepath.Join(t.TempDir(), "sessions")
	for _, tc := range []cliCase{
		{"local-only flag", []string{"run", hello, "--temporal", addr, "--trace", "x.jsonl"}, exitUsage,
			"--trace does not apply with --temporal: the trace is in the session's workflow: kitsoki session trace ID --temporal HOST:PORT -o FILE writes it\n"},
		{"worker flag", []string{"run", hello, "--temporal", addr, "--cassette", "c.yaml"}, exitUsage,
			"--cassette does not apply with --temporal: give it to the workers: kitsoki worker --cassette FILE\n"},
		{"routing flag checked", []string{"run", hello, "--temporal", addr, "--min-confidence", "2"}, exitUsage,
			"--min-confidence 2: want a number from 0 to 1\n"},
		{"blobs without --temporal", []string{"run", hello, "--blobs", "b", "--intents", "bye"}, exitUsage,
			"--blobs applies to a session on a Temporal cluster: give --temporal HOST:PORT too\n"},
		{"say and intents", []string{"run", hello, "--temporal", addr, "--say", "hi", "--intents", "bye"}, exitUsage,
			"--say and --intents cannot be combined: give the turns as one of them (a free-text line on stdin works too)\n"},
		{"outside the stories dir", []string{"run", hello, "--temporal", addr, "--stories", stories}, exitUsage,
			hello + " is not inside the stories directory " + stories + " (--stories): the workers find a session's story by its path relative to that directory; run from it, pass --stories DIR, or drop --stories to send the story with the session\n"},
		// Without --stories the story travels to the workers as a bundle
		// (issue 32): a story outside the current directory is not
		// refused; the cluster is what fails.
		{"bundled from anywhere", []string{"run", hello, "--temporal", addr}, exitFailure,
			unreachable(addr)},
		{"cluster flag without --temporal", []string{"run", hello, "--task-queue", "q", "--intents", "bye"}, exitUsage,
			"--task-queue applies to a session on a Temporal cluster: give --temporal HOST:PORT too\n"},
		{"bad session id", []string{"run", hello, "--temporal", addr, "--stories", "../../stories", "--session", "a b"}, exitUsage,
			"session id \"a b\": use letters, digits, '.', '_' and '-' (at most 128, not starting with a punctuation mark)\n"},
		{"unreachable", []string{"run", hello, "--temporal", addr, "--stories", "../../stories"}, exitFailure,
			unreachable(addr)},
		{"load error", []string{"run", "nope.yaml", "--temporal", addr}, exitLoad, ""},
		// Without --temporal, session trace writes a local session's
		// journal: an id the sessions directory lacks is exit 1.
		{"session trace of an unknown local session", []string{"session", "trace", "x", "--sessions-dir", sessionsNowhere}, exitFailure,
			"session x: no such session in " + sessionsNowhere + "\n"},
		{"session list unreachable", []string{"session", "list", "--temporal", addr}, exitFailure,
			unreachable(addr)},
	} {
		t.Run(tc.name, tc.check)
	}
}

func TestTemporalTLSFlags(t *testing.T) {
	addr := closedAddr(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.pem")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"cert without key", []string{"--tls-cert", "c.pem"}, "kitsoki: --tls-cert and --tls-key go together: give both for mutual TLS, or neither\n"},
		{"missing CA", []string{"--tls-ca", missing}, "kitsoki: --tls-ca: open " + missing + ": no such file or directory\n"},
		{"CA not PEM", []string{"--tls-ca", notPEM}, "kitsoki: --tls-ca " + notPEM + ": no PEM certificate in it\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, "", append([]string{"session", "list", "--temporal", addr}, tc.args...)...)
			if code != exitFailure || errs != tc.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errs, exitFailure, tc.stderr)
			}
		})
	}

	// A TLS endpoint on loopback: without its CA the handshake fails on
	// the certificate; with --tls-ca it passes (the endpoint is no
	// Temporal server, so the dial still fails, later).
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.EnableHTTP2 = true // gRPC asks for h2
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "https://")
	code, _, errs := runCLI(t, "", "session", "list", "--temporal", host, "--tls")
	if code != exitFailure || !strings.Contains(errs, "x509: certificate signed by unknown authority") {
		t.Errorf("--tls without the CA: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runCLI(t, "", "session", "list", "--temporal", host, "--tls-ca", ca)
	if code != exitFailure || strings.Contains(errs, "x509") || !strings.Contains(errs, "cannot reach the Temporal server at "+host) {
		t.Errorf("--tls-ca: exit %d, stderr %q", code, errs)
	}
}
