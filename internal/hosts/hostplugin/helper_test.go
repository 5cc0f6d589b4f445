package hostplugin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/plugin"
)

// The test binary doubles as every host plugin the tests need: with
// helperEnv set it runs the named behaviour instead of the tests.
const helperEnv = "KITSOKI_HOSTPLUGIN_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperDecl declares the test binary as host plugin host.tickets running
// mode.
func helperDecl(t testing.TB, mode string) *story.HostPlugin {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &story.HostPlugin{Name: "host.tickets", Plugin: "subprocess", Command: exe, Dir: t.TempDir(),
		// A race-enabled helper would otherwise sleep 1 s at exit.
		Env: map[string]string{helperEnv: mode, "GORACE": "atexit_sleep_ms=0"}}
}

// ticketOps are the ops of the well-behaved helper ("serve").
var ticketOps = map[string]plugin.HostOp{
	"create": {
		Description: "Open a ticket.",
		ArgsSchema: json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string"},` +
			`"priority":{"type":"integer"}},"additionalProperties":false}`),
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"token_seen":{"type":"string"},` +
			`"request":{"type":"object"}},"additionalProperties":false}`),
		Run: func(_ context.Context, req *plugin.HostInvokeRequest) (map[string]any, error) {
			return map[string]any{"id": "T-" + fmt.Sprint(req.Args["title"]), "token_seen": os.Getenv("TICKETS_TOKEN"),
				"request": req}, nil
		},
	},
	"close": {
		Description:  "Close a ticket.",
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"closed":{"type":"boolean"}}}`),
		Run: func(_ context.Context, req *plugin.HostInvokeRequest) (map[string]any, error) {
			return nil, plugin.Errorf("no such ticket %v", req.Args["id"])
		},
	},
}

func runHelper(mode string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 32<<20)
	next := func() json.RawMessage {
		if !in.Scan() {
			os.Exit(0)
		}
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintln(os.Stderr, "helper: bad request:", err)
			os.Exit(9)
		}
		return r.ID
	}
	switch mode {
	case "serve":
		if err := plugin.ServeHost(ticketOps); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "crash":
		next()
		fmt.Fprintln(os.Stderr, "tickets: exploding")
		os.Exit(3)
	case "garbage":
		next()
		fmt.Println("this is not json")
		time.Sleep(time.Minute)
	case "wrong-id":
		// Answers every call under an id kitsoki never sent.
		for {
			next()
			fmt.Println(`{"jsonrpc":"2.0","id":424242,"result":{"data":{"x":1}}}`)
		}
	case "huge":
		id := next()
		os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"data":{"x":"` + strings.Repeat("x", plugin.MaxMessageBytes) + "\"}}}\n")
		time.Sleep(time.Minute)
	case "never":
		// Never answers; logs every line it reads, so a test sees the
		// $/cancelRequest kitsoki sends at the deadline.
		for in.Scan() {
			fmt.Fprintln(os.Stderr, "got:", in.Text())
		}
	case "bad-data":
		for {
			id := next()
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"data":[1,2]}}`+"\n", id)
		}
	case "no-describe":
		// An old-style plugin: host.describe is not one of its methods.
		for {
			id := next()
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", id)
		}
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
		os.Exit(10)
	}
}
