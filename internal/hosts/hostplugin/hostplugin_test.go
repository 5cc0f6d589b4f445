package hostplugin

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/kitsoki/kitsoki/plugin"
)

// seqSink is the part of a trace sink the handler reads: NextSeq.
type seqSink struct{ next int }

func (s *seqSink) NextSeq(int64) int { return s.next }

func newHandler(t *testing.T, decl *story.HostPlugin, opts Options) *Handler {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	hd, err := New(decl, "tickets-app", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hd.Close() })
	return hd
}

func invoke(t *testing.T, hd *Handler, name string, args map[string]any) *host.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := hd.Invoke(ctx, &host.Call{Namespace: name, Args: args, SessionID: "s1", Turn: 3, State: "filing"})
	if err != nil {
		t.Fatalf("Invoke returned an infrastructure error: %v", err)
	}
	return res
}

// A call is host.invoke with handler, op, args (without the reserved call
// key) and context; the plugin's data is the result, numbers as int64.
func TestInvokeRequestAndData(t *testing.T) {
	decl := helperDecl(t, "serve")
	decl.Env["TICKETS_TOKEN"] = "tok-123"
	hd := newHandler(t, decl, Options{Sink: &seqSink{next: 8}})
	res := invoke(t, hd, "host.tickets.create", map[string]any{"title": "printer", "priority": 2, "call": "file"})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := map[string]any{
		"id": "T-printer", "token_seen": "tok-123",
		"request": map[string]any{
			"handler": "host.tickets", "op": "create",
			"args": map[string]any{"title": "printer", "priority": int64(2)},
			"context": map[string]any{"session_id": "s1", "turn": int64(3), "state_path": "filing",
				"call_id": trace.CallID("tickets-app", "host:"+trace.LiveCallKey(3, "filing", 7))},
		},
	}
	if d := cmp.Diff(want, res.Data); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
}

// Register answers the plugin's name and every name under it; Close stops
// the process.
func TestRegisterAnswersEveryOpUnderTheName(t *testing.T) {
	st := &story.Story{App: story.App{ID: "tickets-app"}, HostPlugins: map[string]*story.HostPlugin{"host.tickets": helperDecl(t, "serve")}}
	h := host.New(st, nil, trace.NewMemSink())
	ps, err := Register(h, st, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	for _, name := range []string{"host.tickets.create", "host.tickets.close", "host.tickets"} {
		if _, ok := h.Handler(name); !ok {
			t.Errorf("no handler for %s", name)
		}
	}
	if _, ok := h.Handler("host.ticketsx.create"); ok {
		t.Error("host.ticketsx.create has a handler: only names under host.tickets. belong to the plugin")
	}
	res, err := h.Dispatch(context.Background(), &host.Call{Namespace: "host.tickets.create", Args: map[string]any{"title": "x"}})
	if err != nil || res.Err != nil || res.Data["id"] != "T-x" {
		t.Fatalf("dispatch: %v %+v", err, res)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	res, _ = h.Dispatch(context.Background(), &host.Call{Namespace: "host.tickets.create", Args: map[string]any{"title": "x"}})
	if res == nil || res.Err == nil || res.Err.Error() != "host plugin host.tickets: plugin_crash: agent is closed" {
		t.Errorf("after Close: %+v", res)
	}
}

// Every bad-input class of the subprocess transport fails the call with
// the transport's detail, the handler named in front: the call's on_error
// fires with it.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name, mode, op string
		kind           string
		want           string // the whole error, or its prefix when wantSuffix is set
		wantSuffix     string
		log            string // a line the plugin log must hold
		after          string // a line the plugin log must come to hold after the call
	}{
		{name: "crash", mode: "crash", op: "create", kind: "plugin_crash",
			want: `host plugin host.tickets: plugin_crash: read response: EOF (plugin closed stdout); plugin exit status 3; stderr tail: "tickets: exploding\n"`},
		{name: "garbage line", mode: "garbage", op: "create", kind: "plugin_crash",
			want: `host plugin host.tickets: plugin_crash: unmarshal response frame: invalid character 'h' in literal true (expecting 'r') (line: "this is not json"); plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "oversized line", mode: "huge", op: "create", kind: "plugin_crash",
			want:       `host plugin host.tickets: plugin_crash: response refused: message exceeds the 16 MiB limit (line: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"data\":{\"x\":\"xxx`,
			wantSuffix: `..."); plugin killed by kitsoki (signal: killed); no stderr output`},
		{name: "json-rpc error", mode: "serve", op: "close", kind: KindPluginError,
			want: `host plugin host.tickets: plugin_error: code -32000: no such ticket 9`},
		{name: "unknown op", mode: "serve", op: "reopen", kind: KindPluginError,
			want: `host plugin host.tickets: plugin_error: code -32602: host.tickets: unknown op "reopen" (this plugin answers: close, create)`},
		{name: "data not an object", mode: "bad-data", op: "create", kind: "plugin_crash",
			want: `host plugin host.tickets: plugin_crash: unmarshal host.invoke result: data is [1,2], want an object`},
		{name: "wrong id, then the deadline", mode: "wrong-id", op: "create", kind: "deadline_exceeded",
			want: `host plugin host.tickets: deadline_exceeded: context cancelled waiting for response: context deadline exceeded`,
			log:  "ignoring response #424242 with no corresponding request"},
		{name: "deadline, then $/cancelRequest", mode: "never", op: "create", kind: "deadline_exceeded",
			want:  `host plugin host.tickets: deadline_exceeded: context cancelled waiting for response: context deadline exceeded`,
			after: `got: {\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs testkit.SyncBuffer
			decl := helperDecl(t, tt.mode)
			decl.Timeout = time.Minute
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			hd := newHandler(t, decl, Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			done := make(chan *host.Result, 1)
			go func() {
				res, err := hd.Invoke(context.Background(), &host.Call{Namespace: "host.tickets." + tt.op, Args: map[string]any{"id": 9}})
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			// The deadline is on the fake clock: move it past the
			// timeout until the call ends (a call that is answered ends
			// on its own first).
			var res *host.Result
			for res == nil {
				select {
				case res = <-done:
				case <-time.After(20 * time.Millisecond):
					// A stray answer must arrive before the deadline.
					if tt.kind == "deadline_exceeded" && (tt.log == "" || strings.Contains(logs.String(), tt.log)) {
						clk.Advance(decl.Timeout)
					}
				}
			}
			var ce *CallError
			if !errors.As(res.Err, &ce) {
				t.Fatalf("error = %v (%T), want a *CallError", res.Err, res.Err)
			}
			if ce.Kind != tt.kind {
				t.Errorf("kind = %q, want %q", ce.Kind, tt.kind)
			}
			got := res.Err.Error()
			if tt.wantSuffix != "" {
				if !strings.HasPrefix(got, tt.want) || !strings.HasSuffix(got, tt.wantSuffix) {
					t.Errorf("error = %.300s...%s\nwant %s...%s", got, got[max(0, len(got)-80):], tt.want, tt.wantSuffix)
				}
			} else if got != tt.want {
				t.Errorf("error (-want +got):\n%s", cmp.Diff(tt.want, got))
			}
			if res.Data != nil {
				t.Errorf("a failed call has data %v", res.Data)
			}
			if tt.log != "" && !strings.Contains(logs.String(), tt.log) {
				t.Errorf("log lacks %q:\n%s", tt.log, logs.String())
			}
			if tt.after != "" {
				// The plugin's stderr is logged as it arrives: wait for
				// the line; the bound only turns a missing line into a
				// failure instead of a hang.
				for i := 0; !strings.Contains(logs.String(), tt.after); i++ {
					if i == 1000 {
						t.Fatalf("log lacks %q:\n%s", tt.after, logs.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

// A JSON-RPC error keeps its code for callers (errors.As) and is not an
// agent error: the run reports it as a host error.
func TestPluginErrorUnwrapsToTheRPCError(t *testing.T) {
	hd := newHandler(t, helperDecl(t, "serve"), Options{})
	res := invoke(t, hd, "host.tickets.close", map[string]any{"id": 7})
	var rpcErr *jsonrpc2.Error
	if !errors.As(res.Err, &rpcErr) || rpcErr.Code != plugin.CodeAgentError {
		t.Fatalf("error %v does not unwrap to the JSON-RPC error", res.Err)
	}
	if res.Err.Error() != "host plugin host.tickets: plugin_error: code -32000: no such ticket 7" {
		t.Errorf("error = %v", res.Err)
	}
}

func TestSpawnFailure(t *testing.T) {
	decl := helperDecl(t, "serve")
	decl.Command = filepath.Join(t.TempDir(), "missing")
	hd := newHandler(t, decl, Options{})
	res := invoke(t, hd, "host.tickets.create", nil)
	want := `host plugin host.tickets: plugin_crash: spawn "` + decl.Command + `": `
	if res.Err == nil || !strings.HasPrefix(res.Err.Error(), want) {
		t.Errorf("error = %v, want %s...", res.Err, want)
	}
}

// A crash detail never shows a secret (an env: value) the plugin printed.
func TestSecretNotInCrashDetail(t *testing.T) {
	decl := helperDecl(t, "crash")
	decl.Env["TICKETS_TOKEN"] = "exploding"
	decl.Secrets = []string{"exploding"}
	hd := newHandler(t, decl, Options{})
	res := invoke(t, hd, "host.tickets.create", nil)
	if res.Err == nil || strings.Contains(res.Err.Error(), "exploding") {
		t.Errorf("error = %v: the secret is shown", res.Err)
	}
}
