package temporal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// server is the dev server TestMain started; tests read it, none change it.
var server devServer

type devServer struct {
	// Addr is the frontend's HOST:PORT on loopback.
	Addr   string
	cmd    *exec.Cmd
	exited chan error
}

// TestMain starts one dev server for the package's tests and stops it
// after them. The CLI is TEMPORAL_CLI, else `temporal` on PATH.
func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration/temporal:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	cli := os.Getenv("TEMPORAL_CLI")
	if cli == "" {
		p, err := exec.LookPath("temporal")
		if err != nil {
			return 0, errors.New("no Temporal CLI: run `make test-temporal` (it installs the pinned CLI and sets TEMPORAL_CLI)")
		}
		cli = p
	}
	dir, err := os.MkdirTemp("", "kitsoki-temporal-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	// Every kitsoki process of the tests (clients and workers) shares one
	// blob store, as the workers and clients of a cluster must: sessions'
	// story bundles and large payloads go there, not into the repository.
	if os.Getenv("KITSOKI_BLOBS_DIR") == "" {
		os.Setenv("KITSOKI_BLOBS_DIR", filepath.Join(dir, "blobs"))
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	s, err := startDevServer(cli, port, filepath.Join(dir, "dev.db"), filepath.Join(dir, "server.log"))
	if err != nil {
		return 0, err
	}
	defer s.stop()
	server = *s
	defer removeBinDirs()
	return m.Run(), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startDevServer(cli string, port int, db, logPath string) (*devServer, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(port), "--db-filename", db, "--log-level", "error",
		// A namespace of its own for the test that prunes every idle
		// session of one (TestSessionPruneOnTheCluster).
		"--namespace", pruneNamespace)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the dev server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s := &devServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, exited: exited}
	// The server takes a second or two; poll its health a bounded number
	// of times.
	for range 300 {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the dev server exited (%v): %s", err, out)
		default:
		}
		if healthy(s.Addr) {
			return s, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("the dev server did not answer on " + s.Addr + " in 30 s")
}

func healthy(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quiet{}})
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err == nil
}

// stop ends the server's process group, SIGTERM then SIGKILL after 5 s,
// and reaps it.
func (s *devServer) stop() {
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
	}
}

// quiet is an SDK logger that drops everything (the dial loop's retries
// would fill the test log).
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
