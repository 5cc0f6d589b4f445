package trace

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// helperEnv makes the test binary act as a trace writer that appends until
// it is killed (see TestHelperTraceWriter).
const helperEnv = "KITSOKI_TRACE_HELPER_PATH"

// killsEnv overrides the number of kills in TestDurabilityUnderSIGKILL.
const killsEnv = "KITSOKI_TRACE_KILLS"

// lineSize is the exact size of every line in the durability test. Lines
// that never straddle a page boundary are written by the kernel in one
// piece; see the comment on TestDurabilityUnderSIGKILL.
const lineSize = 512

// TestDurabilityUnderSIGKILL kills a writer process at random moments, again
// and again on the same file (each new writer resumes it), and checks after
// every kill that the file obeys every read rule, that every event the writer
// reported as appended is in it (Append returns only once its line is in the
// file), and that nothing was written twice.
//
// What it proves is the writer's part: each line leaves the process in a
// single write(2), never split, never buffered. The kernel's part has a
// limit worth knowing: Linux copies a buffered write into the page cache one
// page (folio) at a time and gives up between pages when SIGKILL is pending,
// so a line that straddles a page boundary can be cut by a kill landing in
// that instant. With random line sizes and a writer appending flat out, about
// one kill in a hundred did that on the development machine. The test
// therefore uses lines of exactly 512 bytes after a 512-byte header, which
// never straddle a page.
func TestDurabilityUnderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	kills := 20
	if v := os.Getenv(killsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", killsEnv, v, err)
		}
		kills = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	header := strings.TrimSuffix(string(headerLine(t0, HeaderInfo{})), "\n")
	header += strings.Repeat(" ", lineSize-len(header)-1) + "\n"
	if err := os.WriteFile(path, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}

	inFile := 0
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTraceWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"="+path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan struct{})
		appended := make(chan int, 1)
		go func() {
			n := 0
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				switch sc.Text() {
				case "ready":
					close(ready)
				case "ok":
					n++
				}
			}
			appended <- n
		}()
		select {
		case <-ready:
		case n := <-appended:
			_ = cmd.Wait()
			t.Fatalf("kill %d: writer exited before it was ready (%d appends); stderr:\n%s", i, n, stderr.String())
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-appended
			_ = cmd.Wait()
			t.Fatalf("kill %d: writer not ready after 30s; stderr:\n%s", i, stderr.String())
		}
		time.Sleep(time.Duration(rng.IntN(30_000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		reported := <-appended // the pipe closes when the process is gone
		_ = cmd.Wait()         // reap; the error is the expected "signal: killed"

		evs, err := ReadFile(path)
		if err != nil {
			t.Fatalf("after kill %d the trace is unreadable: %v\nstderr:\n%s", i, err, stderr.String())
		}
		// Every reported append is on disk; at most one more (appended,
		// killed before it could report) may be.
		if got, lo := len(evs), inFile+reported; got < lo || got > lo+1 {
			t.Fatalf("after kill %d: %d events in the file, want %d or %d (%d before, %d reported appended)",
				i, got, lo, lo+1, inFile, reported)
		}
		if size := int64(len(mustRead(t, path))); size%lineSize != 0 {
			t.Fatalf("after kill %d: file size %d is not a multiple of %d: the test's line sizes drifted", i, size, lineSize)
		}
		inFile = len(evs)
	}
	if inFile == 0 {
		t.Fatal("the writers never appended anything")
	}
	t.Logf("%d kills, %d events in the final trace", kills, inFile)
}

// TestHelperTraceWriter is not a test: run by TestDurabilityUnderSIGKILL with
// helperEnv set, it resumes the trace and appends turns of 512-byte lines
// forever, printing "ok" after each Append returns.
func TestHelperTraceWriter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestDurabilityUnderSIGKILL")
	}
	fail := func(code int, err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(code)
	}
	w, err := Create(path, WithClock(clock.NewFake(t0)))
	if err != nil {
		fail(3, err)
	}
	turn, ok := w.LastTurn()
	if ok {
		turn++
	}
	out := bufio.NewWriterSize(os.Stdout, 64)
	fmt.Fprintln(out, "ready")
	out.Flush()
	for i := 0; ; i++ {
		prefix := fmt.Sprintf(`{"turn":%d,"seq":%d,"ts":%q,"kind":%q,"payload":{"i":%d,"text":"`,
			turn, w.NextSeq(turn), t0TS, KindMachineSay, i)
		text := strings.Repeat("x", lineSize-len(prefix)-len(`"}}`+"\n"))
		if err := w.Append(&Event{Turn: turn, Kind: KindMachineSay, Payload: map[string]any{"i": i, "text": text}}); err != nil {
			fail(4, err)
		}
		fmt.Fprintln(out, "ok")
		out.Flush()
		if i%7 == 6 {
			if err := w.EndTurn(); err != nil {
				fail(5, err)
			}
			turn++
		}
	}
}
