// Package agentcli finds the agent CLIs (codex, copilot) for the tests
// that run the real binaries, and gives them an environment that keeps
// them off the network: their own config directory, and every proxy
// variable pointing at a closed loopback port, so nothing but the
// loopback fake endpoint is reachable over HTTP.
package agentcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Prefix is where scripts/setup-agent-clis.sh installs the CLIs,
// relative to the module root.
const Prefix = ".kitsoki/tools/agent-clis"

// Find returns the path of a CLI: $env (e.g. KITSOKI_CODEX) when set,
// the project-local install, else name on PATH. When it is not there the
// test is skipped, saying how to install it, unless CI=true, where
// .ci/run installed it and its absence fails the test.
func Find(t *testing.T, name, env string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if root := moduleRoot(); root != "" {
		p := filepath.Join(root, Prefix, "node_modules", ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := name + " CLI not installed: run scripts/setup-agent-clis.sh (or set " + env + ") to run the tests of the real CLI"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Environ is an environment for a real CLI in a test: PATH and the
// locale from this process, HOME and the CLI's own home (homeVar) in a
// fresh temporary directory, and the proxies closed.
func Environ(t *testing.T, homeVar string) []string {
	t.Helper()
	return EnvironAt(t, t.TempDir(), homeVar)
}

// EnvironAt is Environ with HOME at home, for the tests of a CLI that
// unpacks itself into HOME on its first run (copilot): a package's tests
// share one, made in TestMain.
func EnvironAt(t *testing.T, home, homeVar string) []string {
	t.Helper()
	const deny = "http://127.0.0.1:9"
	env := []string{"HOME=" + home, homeVar + "=" + filepath.Join(home, "cli"),
		"HTTP_PROXY=" + deny, "HTTPS_PROXY=" + deny, "ALL_PROXY=" + deny,
		"http_proxy=" + deny, "https_proxy=" + deny, "all_proxy=" + deny,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
	if err := os.MkdirAll(filepath.Join(home, "cli"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "LANG" || strings.HasPrefix(k, "LC_") {
			env = append(env, kv)
		}
	}
	return env
}

// moduleRoot is the directory of the go.mod above this file (a test
// may have changed its working directory).
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
