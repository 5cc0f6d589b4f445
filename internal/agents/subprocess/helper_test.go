package subprocess

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

// The test binary doubles as every misbehaving plugin the tests need: with
// helperEnv set it runs the named behaviour instead of the tests.
const helperEnv = "KITSOKI_SUBPROCESS_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperDecl declares the test binary as a plugin running mode.
func helperDecl(t testing.TB, mode string) agent.Declaration {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return agent.Declaration{Alias: "agent.test", Plugin: agent.PluginSubprocess, Command: exe,
		// A race-enabled helper would otherwise sleep 1 s at exit.
		Env: map[string]string{helperEnv: mode, "GORACE": "atexit_sleep_ms=0"}}
}

type rpcReq struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Prompt string         `json:"prompt"`
		With   map[string]any `json:"with"`
	} `json:"params"`
}

func runHelper(mode string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 32<<20)
	next := func() rpcReq {
		if !in.Scan() {
			os.Exit(0)
		}
		var r rpcReq
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintln(os.Stderr, "helper: bad request:", err)
			os.Exit(9)
		}
		return r
	}
	reply := func(id json.RawMessage, result string) {
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	switch mode {
	case "pingpong":
		// BenchmarkSubprocessFloor's child: per request line, one decode
		// of the request as a plugin does, then the recorded reply line.
		reply := []byte(os.Getenv(pingpongReplyEnv) + "\n")
		for in.Scan() {
			var r struct {
				ID     json.RawMessage   `json:"id"`
				Method string            `json:"method"`
				Params plugin.AskRequest `json:"params"`
			}
			if err := json.Unmarshal(in.Bytes(), &r); err != nil {
				fmt.Fprintln(os.Stderr, "helper: bad request:", err)
				os.Exit(9)
			}
			if _, err := os.Stdout.Write(reply); err != nil {
				os.Exit(1)
			}
		}
	case "echo":
		if err := plugin.Serve(echo.Agent{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "env":
		r := next()
		wd, _ := os.Getwd()
		b, _ := json.Marshal(map[string]string{"wd": wd, "foo": os.Getenv("KITSOKI_TEST_FOO"), "args": strings.Join(os.Args[1:], ",")})
		reply(r.ID, fmt.Sprintf(`{"submission":%s}`, b))
		next()
	case "crash-mid-call":
		next()
		fmt.Fprintln(os.Stderr, "helper: about to crash")
		fmt.Fprintln(os.Stderr, "panic: model exploded")
		os.Exit(3)
	case "leak-secret":
		next()
		fmt.Fprintln(os.Stderr, "token is", os.Getenv("KITSOKI_TEST_SECRET"))
		os.Exit(2)
	case "wire":
		// Answers with the request line exactly as it arrived, then exits.
		if !in.Scan() {
			os.Exit(0)
		}
		line := in.Text()
		var r rpcReq
		json.Unmarshal([]byte(line), &r)
		b, _ := json.Marshal(line)
		reply(r.ID, fmt.Sprintf(`{"submission":%s}`, b))
		os.Exit(0)
	case "big":
		// Single-threaded: answers every call with 2 MiB, writing while
		// kitsoki may still be writing the next (large) request.
		// The first two answers go out back to back, before the third
		// request is read.
		big := strings.Repeat("z", 2<<20)
		first, second := next(), next()
		reply(first.ID, `{"submission":"`+big+`"}`)
		reply(second.ID, `{"submission":"`+big+`"}`)
		for {
			r := next()
			reply(r.ID, `{"submission":"`+big+`"}`)
		}
	case "exit-after-one":
		r := next()
		reply(r.ID, `{"submission":{"n":1}}`)
		os.Exit(4)
	case "garbage-after-one":
		// Answers, then breaks the protocol while no call is in flight,
		// and stays alive reading stdin.
		r := next()
		reply(r.ID, `{"submission":{"n":1}}`)
		fmt.Println("this is not json")
		next()
		os.Exit(0)
	case "garbage":
		next()
		fmt.Println("this is not json")
		time.Sleep(time.Minute)
	case "partial":
		r := next()
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"res`, r.ID)
		os.Exit(5)
	case "never":
		for {
			next()
		}
	case "log-lines":
		// Logs every line it reads to stderr, never answering: tests see
		// what kitsoki wrote (a $/cancelRequest, say) in the plugin log.
		for in.Scan() {
			fmt.Fprintln(os.Stderr, "got:", in.Text())
		}
	case "late":
		// Answers each call after with.sleep_ms, so the late answer to a
		// timed-out call arrives while the next call waits.
		for {
			r := next()
			go func(r rpcReq) {
				ms, _ := r.Params.With["sleep_ms"].(float64)
				time.Sleep(time.Duration(ms) * time.Millisecond)
				reply(r.ID, fmt.Sprintf(`{"submission":%q}`, r.Params.Prompt))
			}(r)
		}
	case "say":
		// Answers the first call with the line in KITSOKI_TEST_LINE ($ID
		// stands for the call's id), then reads on without answering.
		r := next()
		fmt.Println(strings.ReplaceAll(os.Getenv("KITSOKI_TEST_LINE"), "$ID", string(r.ID)))
		for {
			next()
		}
	case "rpc-error":
		for {
			r := next()
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"no model available"}}`+"\n", r.ID)
		}
	case "bad-result":
		for {
			r := next()
			reply(r.ID, `[1,2]`)
		}
	case "out-of-order":
		first, second := next(), next()
		reply(second.ID, fmt.Sprintf(`{"submission":%q}`, second.Params.Prompt))
		reply(first.ID, fmt.Sprintf(`{"submission":%q}`, first.Params.Prompt))
		for {
			r := next()
			reply(r.ID, fmt.Sprintf(`{"submission":%q}`, r.Params.Prompt))
		}
	case "huge":
		r := next()
		os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"submission":"` + strings.Repeat("x", plugin.MaxMessageBytes) + "\"}}\n")
		time.Sleep(time.Minute)
	case "bad-utf8":
		r := next()
		os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":{"submission":"caf` + "\xe9" + `"}}` + "\n")
		time.Sleep(time.Minute)
	case "request":
		next()
		fmt.Println(`{"jsonrpc":"2.0","id":99,"method":"hello","params":{}}`)
		time.Sleep(time.Minute)
	case "unknown-id":
		for {
			r := next()
			reply(json.RawMessage("12345"), `{"submission":1}`)
			reply(r.ID, `{"submission":2}`)
		}
	case "stderr-spam":
		r := next()
		for i := range 200 {
			fmt.Fprintf(os.Stderr, "line %d %s\n", i, strings.Repeat("y", 100))
		}
		fmt.Fprintln(os.Stderr, strings.Repeat("z", 10000))
		reply(r.ID, `{"submission":"ok"}`)
		next()
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		r := next()
		reply(r.ID, `{"submission":"ok"}`)
		for {
			time.Sleep(time.Hour)
		}
	case "host":
		// A kitsoki stand-in: it starts a plugin, prints the plugin's pid
		// and waits to be killed, so a test can check the plugin dies too.
		decl := agent.Declaration{Command: os.Args[0], Env: map[string]string{helperEnv: "echo"}}
		a, err := New(decl)
		if err != nil {
			os.Exit(7)
		}
		if _, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Prompt: "hi"})); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(8)
		}
		fmt.Println(a.proc.pid)
		time.Sleep(time.Minute)
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
		os.Exit(10)
	}
}
