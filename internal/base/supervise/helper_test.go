//go:build unix

package supervise

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as every child the tests need: with helperEnv
// set it runs the named behaviour instead of the tests, as the standard
// library's os/exec tests do.
const helperEnv = "KITSOKI_SUPERVISE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

// helper is a Config running the test binary in mode.
func helper(t testing.TB, mode string, args ...string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A race-enabled helper would otherwise sleep 1 s at exit.
	return Config{Name: "helper", Path: exe, Args: args,
		Env: append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0")}
}

// helperCmd runs the test binary in mode outside any supervisor.
func helperCmd(mode string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	return cmd
}

// block waits to be killed. (An empty select would be reported as a
// deadlock, ending the helper.)
func block() {
	for {
		time.Sleep(time.Hour)
	}
}

func runHelper(mode string) int {
	switch mode {
	case "exit":
		// Reads one line, then exits with the status in its first argument.
		bufio.NewReader(os.Stdin).ReadString('\n')
		code, _ := strconv.Atoi(os.Args[1])
		fmt.Fprintln(os.Stderr, "exiting with", code)
		return code
	case "echo":
		// Copies stdin lines to stdout, and says so on stderr, until EOF.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(sc.Text())
			fmt.Fprintln(os.Stderr, "echoed", sc.Text())
		}
		return 0
	case "term":
		// Dies of SIGTERM (the default action) once ready.
		fmt.Println("ready")
		block()
	case "ignore-term":
		// Says it got SIGTERM and carries on.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Println("ready")
		for range sigs {
			fmt.Println("got SIGTERM")
		}
	case "quiet-ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		block()
	case "grandparent", "grandparent-exits":
		// Starts a grandchild that ignores SIGTERM and holds this
		// process's stdout (as its stderr), prints "ready <pid>", then
		// exits (grandparent-exits) or waits to die of SIGTERM.
		gc := helperCmd("quiet-ignore-term")
		out, _ := gc.StdoutPipe()
		gc.Stderr = os.Stdout
		if len(os.Args) > 1 && os.Args[1] == "escape" {
			// Leaves the group, and clears the mark its descendants carry,
			// so nothing can tell it was this process's.
			gc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			gc.Env = slices.DeleteFunc(gc.Env, func(kv string) bool { return strings.HasPrefix(kv, "KITSOKI_SUPERVISED=") })
		}
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 7
		}
		bufio.NewReader(out).ReadString('\n')
		fmt.Println("ready", gc.Process.Pid)
		if mode == "grandparent-exits" {
			return 0
		}
		block()
	case "double-fork":
		// Starts a middle process in a session of its own, which starts
		// a sleeper and exits without waiting for it: the sleeper is an
		// orphan outside this process's group and session. Prints
		// "ready <sleeper> <middle>" and exits.
		mid := helperCmd("middle")
		mid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, _ := mid.StdoutPipe()
		if err := mid.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 7
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		fmt.Println("ready", strings.TrimSpace(line), mid.Process.Pid)
		return 0
	case "middle":
		sl := helperCmd("quiet-ignore-term")
		out, _ := sl.StdoutPipe()
		if err := sl.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 7
		}
		bufio.NewReader(out).ReadString('\n')
		fmt.Println(sl.Process.Pid)
		return 0
	case "host":
		// A kitsoki stand-in: it starts a child holding this process's
		// stdout, prints the child's pid and waits to be killed.
		cmd := helperCmd("quiet-ignore-term")
		p, err := Start(Config{Name: "child", Path: cmd.Path, Env: cmd.Env, Stdout: os.Stdout})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 8
		}
		fmt.Println("child", p.Pid())
		block()
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return 10
}
