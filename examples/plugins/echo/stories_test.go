package echo_test

// End to end: `kitsoki run` on the example stories, each answered by its
// example plugin over its wire. The binaries are built into a temporary
// tree shaped like the repository (bin/, stories/, examples/), so the
// stories' relative commands resolve exactly as they do after `make`.

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const token = "e2e-token-5d41402abc4b2a76"

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func build(t *testing.T, gobin, out, pkg string) {
	t.Helper()
	cmd := exec.Command(gobin, "build", "-o", out, "github.com/kitsoki/kitsoki/"+pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func TestExampleStoriesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kitsoki and the example plugins")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go toolchain not in PATH")
	}
	root, tree := repoRoot(t), t.TempDir()
	bin := filepath.Join(tree, "bin")
	kitsoki := filepath.Join(bin, "kitsoki")
	build(t, gobin, kitsoki, "cmd/kitsoki")
	build(t, gobin, filepath.Join(bin, "echo-go"), "examples/plugins/echo-go")
	build(t, gobin, filepath.Join(bin, "echo-mcp"), "examples/plugins/echo-mcp")
	for _, d := range []string{"stories/plugin-echo-go", "stories/plugin-echo-py", "stories/plugin-echo-mcp", "examples/plugins/echo-py"} {
		testkit.CopyInto(t, filepath.Join(root, d), filepath.Join(tree, d))
	}

	run := func(t *testing.T, story string, env []string, intents string) (string, []byte) {
		t.Helper()
		tracePath := filepath.Join(t.TempDir(), "trace.jsonl")
		cmd := exec.Command(kitsoki, "run", filepath.Join(tree, "stories", story, "app.yaml"), "--trace", tracePath, "--intents", intents)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kitsoki run %s: %v\nstdout:\n%s\nstderr:\n%s", story, err, stdout.String(), stderr.String())
		}
		trace, err := os.ReadFile(tracePath)
		if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), trace
	}
	check := func(t *testing.T, out string, trace []byte, want string) {
		t.Helper()
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
		if !bytes.Contains(trace, []byte(`"kind":"agent.call.complete"`)) || !bytes.Contains(trace, []byte(`"reason":"scripted by the echo plugin"`)) {
			t.Errorf("trace lacks the plugin's answer:\n%s", trace)
		}
	}

	t.Run("go subprocess", func(t *testing.T) {
		out, trace := run(t, "plugin-echo-go", nil, "submit claim=taxi")
		check(t, out, trace, "taxi: approved (scripted by the echo plugin).")
	})

	t.Run("python subprocess", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 not found: the Python example plugin cannot run here")
		}
		out, trace := run(t, "plugin-echo-py", nil, "submit claim=lunch decision=reject")
		check(t, out, trace, "lunch: rejected (scripted by the echo plugin).")
	})

	t.Run("mcp_http", func(t *testing.T) {
		srv := exec.Command(filepath.Join(bin, "echo-mcp"), "-addr", "127.0.0.1:0")
		srv.Env = append(os.Environ(), "ECHO_MCP_TOKEN="+token)
		stdout, err := srv.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
		lines := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			lines <- line
		}()
		var url string
		select {
		case line := <-lines:
			url = strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
		case <-time.After(30 * time.Second):
			t.Fatal("echo-mcp did not report its address")
		}
		app := filepath.Join(tree, "stories", "plugin-echo-mcp", "app.yaml")
		b, _ := os.ReadFile(app)
		b = bytes.Replace(b, []byte("http://127.0.0.1:7301/mcp"), []byte(url), 1)
		if err := os.WriteFile(app, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, trace := run(t, "plugin-echo-mcp", []string{"ECHO_MCP_TOKEN=" + token}, "submit claim=lunch decision=reject")
		check(t, out, trace, "lunch: rejected (scripted by the echo plugin).")
		if bytes.Contains(trace, []byte(token)) {
			t.Error("the bearer token reached the trace")
		}
	})
}
