package subprocess

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/plugin"
)

// TestIncomingMessages pins how each kind of line a plugin may write is
// taken: which end the call and kill the plugin, which keep it.
func TestIncomingMessages(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		kind       agent.ErrorKind // "" → the call succeeds
		detail     string
		kept       bool // the process survives
	}{
		{name: "result with a null error", line: `{"jsonrpc":"2.0","id":$ID,"result":{"submission":1},"error":null}`, kept: true},
		{name: "null result", line: `{"jsonrpc":"2.0","id":$ID,"result":null}`, kept: true,
			kind: agent.KindPluginCrash, detail: "subprocess agent: unmarshal AskResponse: result is null, want an object"},
		{name: "error with data", line: `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32000,"message":"busy","data":{"retry":true}}}`, kept: true,
			kind: agent.KindPluginCrash, detail: "subprocess agent: rpc error -32000: busy"},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"log","params":{"msg":"hi"}}`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: plugin sent a notification (method "log") but may only send responses; plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "neither request nor response", line: `{"jsonrpc":"2.0","id":$ID}`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: unmarshal response frame: message is neither a request nor a response (no method, result or error) (line: "{\"jsonrpc\":\"2.0\",\"id\":1}"); plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "bad error object", line: `{"jsonrpc":"2.0","id":$ID,"error":{"code":"x","message":"m"}}`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: unmarshal response frame: json: cannot unmarshal string into Go struct field Error.code of type int64 (line: "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}"); plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":$ID,"result":{}}]`,
			kind:   agent.KindPluginCrash,
			detail: `subprocess agent: unmarshal response frame: json: cannot unmarshal array into Go value of type subprocess.envelope (line: "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]"); plugin killed by kitsoki (signal: killed); no stderr output`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decl := helperDecl(t, "say")
			decl.Env["KITSOKI_TEST_LINE"] = tc.line
			a := newAgent(t, decl)
			resp, err := ask(t, a, "x", nil)
			if tc.kind == "" {
				if err != nil || string(resp.Submission) != "1" {
					t.Fatalf("Ask = %+v, %v; want submission 1", resp, err)
				}
			} else {
				wantAskError(t, err, tc.kind, tc.detail)
			}
			if alive := a.current().alive(); alive != tc.kept {
				t.Errorf("process alive = %v, want %v", alive, tc.kept)
			}
		})
	}
}

// Output a plugin writes while no call waits is read as it comes, so a
// line breaking the protocol between calls ends that process at once and
// the next call gets a fresh one (not the junk).
func TestOutputBetweenCallsIsReadAtOnce(t *testing.T) {
	a := newAgent(t, helperDecl(t, "garbage-after-one"))
	if _, err := ask(t, a, "one", nil); err != nil {
		t.Fatal(err)
	}
	first := a.current()
	select {
	case <-first.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the line written between calls was not read: the plugin still runs")
	}
	if c := first.causeErr(); c == nil || describe(c) != `unmarshal response frame: invalid character 'h' in literal true (expecting 'r') (line: "this is not json")` {
		t.Errorf("cause = %v", c)
	}
	resp, err := ask(t, a, "two", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"n":1}` || a.currentPID() == first.pid {
		t.Errorf("second call: %s from pid %d (first %d), want {\"n\":1} from a new process", resp.Submission, a.currentPID(), first.pid)
	}
}

// A stream whose reads cannot be interrupted (no read deadline) still
// serves calls: the idle reader reads every reply and hands it over.
func TestConnWithoutReadDeadlines(t *testing.T) {
	outR, outW := io.Pipe() // the plugin's stdout
	inR, inW := io.Pipe()   // its stdin
	c := newConn(plugin.NewLineStream(outR, inW, nil), nil, slog.New(slog.DiscardHandler), func(error) {})
	defer func() {
		c.close()
		outW.Close()
		inR.Close()
	}()
	go func() { // the plugin: answers each request with its id, last first
		in := bufio.NewScanner(inR)
		var ids []string
		for in.Scan() {
			var req struct{ ID json.RawMessage }
			if json.Unmarshal(in.Bytes(), &req) != nil {
				return
			}
			ids = append(ids, string(req.ID))
			if len(ids) == 2 {
				for i := len(ids) - 1; i >= 0; i-- {
					fmt.Fprintf(outW, `{"jsonrpc":"2.0","id":%s,"result":{"submission":%s}}`+"\n", ids[i], ids[i])
				}
				ids = nil
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make([]string, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			r, err := c.ask(ctx, uint64(i+1), []byte(`{}`))
			if err != nil {
				got[i] = err.Error()
				return
			}
			got[i] = string(r.resp.Submission)
		})
	}
	wg.Wait()
	if diff := cmp.Diff([]string{"1", "2"}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

// The idle reader takes over only once no caller has wanted to read for
// idleAfter (clock.Due's verdict); a closed connection or a caller
// reading stops the looking, however long the last caller has been gone.
func TestIdleDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	later := t0.Add(idleAfter / 4)
	for _, closed := range []bool{false, true} {
		for waiting := range 3 {
			kick, wait := idleDue(closed, waiting, t0, later)
			wantKick, wantWait := clock.Due(idleAfter, t0, later)
			if closed || waiting > 0 {
				wantKick, wantWait = false, 0
			}
			if kick != wantKick || wait != wantWait {
				t.Errorf("idleDue(closed %v, %d waiting) = %v, %v; want %v, %v", closed, waiting, kick, wait, wantKick, wantWait)
			}
		}
	}
	if kick, _ := idleDue(false, 0, t0, t0.Add(idleAfter)); !kick {
		t.Error("idleDue at idleAfter did not kick")
	}
}
