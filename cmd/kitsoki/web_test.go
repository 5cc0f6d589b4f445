package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/kitsoki/kitsoki/internal/view/web"
)

// webChild is a kitsoki web child process and the address it printed.
type webChild struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	base   string // http://127.0.0.1:PORT
	token  string
}

var servingLine = regexp.MustCompile(`^kitsoki: serving 1 story at (http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]+) \(Ctrl-C stops\)$`)

// startWeb runs kitsoki web with args and waits for the line that gives
// its address; the process is interrupted and reaped when the test ends.
func startWeb(t *testing.T, args ...string) *webChild {
	t.Helper()
	cmd := kitsokiChild(t, t.TempDir(), append([]string{"web"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &webChild{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("kitsoki web printed no address: %v\nstderr: %s", err, c.stderr)
	}
	m := servingLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		t.Fatalf("kitsoki web's first line = %q", line)
	}
	c.base, c.token = m[1], m[2]
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return c
}

// stop interrupts the server as Ctrl-C does and wants exit status 0.
func (c *webChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("kitsoki web after Ctrl-C: %v\nstderr: %s", err, c.stderr)
	}
}

// call sends one request: the token in its header unless token is "",
// host in place of the server's address unless it is "".
func (c *webChild) call(t *testing.T, method, path, token, host string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(web.TokenHeader, token)
	}
	if host != "" {
		req.Host = host
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// waitState reads the session's event stream until a status puts it in
// state with no call in flight.
func (c *webChild) waitState(t *testing.T, id, state string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", c.base+"/api/sessions/"+id+"/events", nil)
	req.Header.Set(web.TokenHeader, c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	event, st, busy := "", "", true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "status":
			var s struct{ State string }
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s)
			st = s.State
		case strings.HasPrefix(line, "data: ") && event == "calls":
			var s struct{ Busy string }
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s)
			busy = s.Busy != ""
		case line == "" && st == state && !busy:
			return
		}
	}
	t.Fatalf("the event stream ended (%v) before %s; stderr: %s", sc.Err(), state, c.stderr)
}

// TestWebCommand runs kitsoki web as a user does: the printed address
// and its token, the guard, a session played over the API with the demo
// cassette, Ctrl-C, and a second server on the same sessions directory
// that keeps the token and lists the session where it was.
func TestWebCommand(t *testing.T) {
	story, _ := filepath.Abs("../../stories/hello")
	tape, _ := filepath.Abs("../../stories/hello/cassettes/demo.yaml")
	dir := filepath.Join(t.TempDir(), "sessions")
	args := []string{story, "--cassette", tape, "--addr", "127.0.0.1:0", "--sessions-dir", dir}
	c := startWeb(t, args...)

	if code, out := c.call(t, "GET", "/api/stories", "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d %v", code, out)
	}
	if code, out := c.call(t, "GET", "/api/stories", c.token, "evil.example:80", nil); code != http.StatusForbidden {
		t.Errorf("with a foreign Host: %d %v", code, out)
	}
	code, out := c.call(t, "POST", "/api/sessions", c.token, "", map[string]any{"story": "hello"})
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, out)
	}
	id := out["id"].(string)
	c.waitState(t, id, "lobby")
	if code, out := c.call(t, "POST", "/api/sessions/"+id+"/input", c.token, "", map[string]any{"intent": "greet", "slots": map[string]any{"name": "Ada", "style": "formal"}}); code != http.StatusAccepted {
		t.Fatalf("input: %d %v", code, out)
	}
	c.waitState(t, id, "greeted")
	c.stop(t)
	if !strings.Contains(c.stderr.String(), "kitsoki web: sessions in "+dir) {
		t.Errorf("stderr = %q", c.stderr)
	}

	// The same command again: the same token, the session where it was.
	c2 := startWeb(t, args...)
	if c2.token != c.token {
		t.Errorf("the token changed across a restart")
	}
	code, out = c2.call(t, "GET", "/api/stories", c2.token, "", nil)
	if code != http.StatusOK {
		t.Fatalf("stories: %d %v", code, out)
	}
	b, _ := json.Marshal(out["stories"])
	var cards []struct {
		Key      string
		Sessions []struct {
			ID, State string
			Turn      int
		}
	}
	_ = json.Unmarshal(b, &cards)
	if len(cards) != 1 || cards[0].Key != "hello" || len(cards[0].Sessions) != 1 || cards[0].Sessions[0].ID != id ||
		cards[0].Sessions[0].State != "greeted" || cards[0].Sessions[0].Turn != 1 {
		t.Errorf("after the restart the stories are %s", b)
	}
	c2.waitState(t, id, "greeted") // the session is opened from its journal
	if code, out := c2.call(t, "POST", "/api/sessions/"+id+"/input", c2.token, "", map[string]any{"intent": "bye"}); code != http.StatusAccepted {
		t.Fatalf("input after the restart: %d %v", code, out)
	}
	c2.waitState(t, id, "farewell")
	c2.stop(t)

	// --new-token: the old token is refused.
	c3 := startWeb(t, append(args, "--new-token")...)
	if c3.token == c.token {
		t.Error("--new-token kept the token")
	}
	if code, _ := c3.call(t, "GET", "/api/stories", c.token, "", nil); code != http.StatusUnauthorized {
		t.Errorf("the old token after --new-token: %d", code)
	}
	c3.stop(t)
}

// TestWebCommandErrors: what kitsoki web says of bad arguments, and its
// exit status.
func TestWebCommandErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	hello, _ := filepath.Abs("../../stories/hello")
	sessions := filepath.Join(dir, "sessions")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing dir", []string{missing}, "kitsoki web: " + missing + ": stat " + missing + ": no such file or directory (give a story directory, its app.yaml, or a directory of stories)\n"},
		{"no story", []string{empty}, "kitsoki web: " + empty + ": no story here: want " + empty + "/app.yaml or " + empty + "/NAME/app.yaml\n"},
		{"bad addr", []string{hello, "--addr", "nope"}, `kitsoki web: --addr "nope": address nope: missing port in address (want host:port, e.g. 127.0.0.1:7700)` + "\n"},
		{"missing cassette", []string{hello, "--cassette", filepath.Join(dir, "none.yaml")}, `kitsoki web: --cassette: cassette: "` + filepath.Join(dir, "none.yaml") + `": open ` + filepath.Join(dir, "none.yaml") + ": no such file or directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, "", append([]string{"web", "--sessions-dir", sessions}, tc.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errs)
			}
			if errs != tc.want {
				t.Errorf("stderr = %q, want %q", errs, tc.want)
			}
		})
	}
}
