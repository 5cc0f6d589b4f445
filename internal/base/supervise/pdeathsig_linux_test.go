package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestChildDiesWithKitsoki SIGKILLs a kitsoki stand-in and checks the
// child it started dies too (the parent-death signal): the child holds the
// stand-in's stdout, which reaches EOF only once both are gone.
func TestChildDiesWithKitsoki(t *testing.T) {
	host := helperCmd("host")
	// A pipe of our own: exec.Cmd.Wait would close StdoutPipe's.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	host.Stdout = w
	err = host.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	child := 0
	for child == 0 {
		line := readLine(t, r)
		if pid, ok := strings.CutPrefix(line, "child "); ok {
			child, _ = strconv.Atoi(pid)
		}
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	host.Process.Kill()
	host.Wait()
	within(t, "EOF from the child", func() { io.Copy(io.Discard, r) })
}

// TestThreadRetirementSparesTheChild starts a child from a goroutine whose
// thread then exits (a locked goroutine's thread ends with it); the
// parent-death signal must not fire, since kitsoki is still there. A
// supervisor forking on its caller's thread fails this.
func TestThreadRetirementSparesTheChild(t *testing.T) {
	cfg := helper(t, "echo")
	cfg.PipeStdin, cfg.PipeStdout = true, true
	var p *Process
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		p, err = Start(cfg)
	}()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		<-p.Done()
		p.Stdin().Close()
		p.Stdout().Close()
	})
	out := bufio.NewReader(p.Stdout())
	for i := range 5 {
		time.Sleep(20 * time.Millisecond) // give a wrongly attached signal time to land
		if _, err := p.Stdin().WriteString("ping\n"); err != nil {
			t.Fatalf("ping %d: %v", i, err)
		}
		if got := readLine(t, out); got != "ping" {
			t.Fatalf("ping %d: child said %q", i, got)
		}
	}
	if _, ok := p.Exit(); ok {
		t.Error("the child ended when the thread that started it did")
	}
}

// A child that double-forks a process into a session of its own (setsid)
// does not leave it running: kitsoki, a child subreaper, adopts the
// orphan, and reaping the child kills and reaps it, and reaps the zombie
// of the middle process, before Done closes.
func TestDoubleForkedDescendantIsReaped(t *testing.T) {
	cfg := helper(t, "double-fork")
	cfg.PipeStdout = true
	p := start(t, cfg)
	var sleeper, middle int
	if _, err := fmt.Sscanf(readLine(t, bufio.NewReader(p.Stdout())), "ready %d %d", &sleeper, &middle); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) })
	within(t, "Done", func() { <-p.Done() })
	// Signal 0 reaches a live process and a zombie alike: ESRCH means it
	// was reaped.
	for name, pid := range map[string]int{"the setsid'd sleeper": sleeper, "the middle process": middle} {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is still there after the child was reaped: kill(0) = %v", name, pid, err)
		}
	}
}

// Another child of the program that has exited and is not waited for yet
// (a zombie: a server's plugin, a parallel test's command) makes the sweep
// wait a moment, but is no descendant that keeps starting others: the
// sweep after a child that left nothing behind says nothing. It warned
// when its waits used up its rounds (seen under load in CI).
func TestSweepBesideAnotherChildsZombie(t *testing.T) {
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reap(pid) })
	for { // until it is a zombie
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || bytes.Contains(b, []byte(") Z ")) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var log bytes.Buffer
	cfg := helper(t, "exit", "0")
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	p := start(t, cfg)
	within(t, "Done", func() { <-p.Done() })
	if log.Len() != 0 {
		t.Errorf("the sweep warned:\n%s", log.String())
	}
}
