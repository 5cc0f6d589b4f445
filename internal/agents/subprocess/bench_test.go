package subprocess

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/median"
)

// buildExample compiles an example plugin into a temporary directory, so
// `go test` needs no prior `make`.
func buildExample(tb testing.TB, pkg string) string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("go toolchain not in PATH")
	}
	out := filepath.Join(tb.TempDir(), filepath.Base(pkg))
	cmd := exec.Command(gobin, "build", "-o", out, "github.com/kitsoki/kitsoki/"+pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// benchRequest is the benchmark call: a decide with a 1 KB prompt.
func benchRequest() *agent.AskRequest {
	return &agent.AskRequest{SessionID: "bench", Turn: 1, StatePath: "review", Verb: "decide",
		Prompt:   strings.Repeat("Is this claim within policy? ", 36)[:1024],
		With:     map[string]any{"answer": `{"decision":"approve","reason":"within policy","confidence":0.9}`},
		Deadline: "2026-01-01T00:00:00Z", CallID: "0123456789abcdef"}
}

// BenchmarkSubprocessAsk is one agent.ask round trip with a 1 KB prompt
// against the Go example plugin (examples/plugins/echo-go). Besides ns/op
// (the mean) it reports the median and, where /proc has them, the
// voluntary context switches an op of kitsoki's process and the plugin's
// (kitsoki-vcsw/op, plugin-vcsw/op: each is a thread that blocked and
// had to be woken again).
func BenchmarkSubprocessAsk(b *testing.B) {
	bin := buildExample(b, "examples/plugins/echo-go")
	a, err := New(agent.Declaration{Alias: "agent.echo", Command: bin})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	req := benchRequest()
	ctx := context.Background()
	if _, err := a.Ask(ctx, agent.NewCall(req)); err != nil { // spawn outside the timing
		b.Fatal(err)
	}
	switches := newSwitchCounter(a.current().pid)
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := a.Ask(ctx, agent.NewCall(req)); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	median.Report(b, times)
	switches.report(b, len(times))
}

// switchCounter reads the voluntary context switches of kitsoki's
// process and a child's, summed over their threads, from /proc.
type switchCounter struct {
	child         int
	self0, child0 int64
	ok            bool
}

func newSwitchCounter(child int) *switchCounter {
	c := &switchCounter{child: child}
	var ok1, ok2 bool
	c.self0, ok1 = voluntarySwitches(os.Getpid())
	c.child0, ok2 = voluntarySwitches(child)
	c.ok = ok1 && ok2
	return c
}

// report adds kitsoki-vcsw/op and plugin-vcsw/op over n ops.
func (c *switchCounter) report(b *testing.B, n int) {
	self, ok1 := voluntarySwitches(os.Getpid())
	child, ok2 := voluntarySwitches(c.child)
	if !c.ok || !ok1 || !ok2 || n == 0 {
		return
	}
	b.ReportMetric(float64(self-c.self0)/float64(n), "kitsoki-vcsw/op")
	b.ReportMetric(float64(child-c.child0)/float64(n), "plugin-vcsw/op")
}

// voluntarySwitches sums voluntary_ctxt_switches over pid's threads;
// false where /proc does not have them.
func voluntarySwitches(pid int) (int64, bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "status"))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that ended
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, false
				}
				sum += n
			}
		}
	}
	return sum, true
}

// pingpongReplyEnv hands the "pingpong" helper the reply line it sends.
const pingpongReplyEnv = "KITSOKI_PINGPONG_REPLY"

// BenchmarkSubprocessFloor is the floor of BenchmarkSubprocessAsk: the
// same request line kitsoki writes for benchRequest and the same reply
// line the echo plugin sends back, ping-ponged over the pipes of a child
// process that decodes each request once with encoding/json (as any Go
// plugin must) and answers with the recorded line. No encoding, framing
// checks, id matching or hand-offs on kitsoki's side: issue 20's
// subprocess target is a ratio to this.
func BenchmarkSubprocessFloor(b *testing.B) {
	bin := buildExample(b, "examples/plugins/echo-go")
	// The request line as kitsoki writes it (the "wire" helper answers with it).
	w, err := New(helperDecl(b, "wire"))
	if err != nil {
		b.Fatal(err)
	}
	resp, err := w.Ask(context.Background(), agent.NewCall(benchRequest()))
	w.Close()
	if err != nil {
		b.Fatal(err)
	}
	var line string
	if err := json.Unmarshal(resp.Submission, &line); err != nil {
		b.Fatal(err)
	}
	request := []byte(line + "\n")
	// The echo plugin's reply line to it.
	reply := exchangeLine(b, exec.Command(bin), request)

	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=pingpong", pingpongReplyEnv+"="+string(bytes.TrimSuffix(reply, []byte("\n"))), "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("pingpong child: %v", err)
		}
	}()
	out := bufio.NewReaderSize(stdout, 64<<10)
	roundTrip := func() {
		if _, err := stdin.Write(request); err != nil {
			b.Fatal(err)
		}
		got, err := out.ReadSlice('\n')
		if err != nil || len(got) != len(reply) {
			b.Fatalf("reply %q (%v), want %d bytes", got, err, len(reply))
		}
	}
	roundTrip()
	switches := newSwitchCounter(cmd.Process.Pid)
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		roundTrip()
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	median.Report(b, times)
	switches.report(b, len(times))
}

// exchangeLine starts cmd, writes line to its stdin, and returns the first
// line it prints; the process is reaped before returning.
func exchangeLine(tb testing.TB, cmd *exec.Cmd, line []byte) []byte {
	tb.Helper()
	cmd.Stdin = bytes.NewReader(line)
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v", cmd.Path, err)
	}
	first, _, ok := bytes.Cut(out, []byte("\n"))
	if !ok {
		tb.Fatalf("%s printed no line: %q", cmd.Path, out)
	}
	return append(first, '\n')
}
