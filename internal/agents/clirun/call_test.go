package clirun

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

var testCLI = CLI{Name: "test CLI", Command: "test-cli", Install: "install it"}

func TestWithDeadline(t *testing.T) {
	due := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	ctx, cancel := WithDeadline(context.Background(), due.Format(time.RFC3339Nano))
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(due) {
		t.Errorf("deadline = %v, %v; want %v", d, ok, due)
	}
	for _, s := range []string{"", "tomorrow"} {
		ctx, cancel := WithDeadline(context.Background(), s)
		cancel()
		if _, ok := ctx.Deadline(); ok || ctx.Err() != nil {
			t.Errorf("WithDeadline(%q): the context changed (err %v)", s, ctx.Err())
		}
	}
}

func TestFailed(t *testing.T) {
	done, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the call's deadline"))
	tests := []struct {
		name string
		ctx  context.Context
		out  Output
		kind agent.ErrorKind
		want string
	}{
		{"ran", context.Background(), Output{ExitCode: 3}, "", ""},
		{"deadline", done, Output{StartErr: errors.New("killed")}, agent.KindDeadlineExceeded,
			"test CLI did not finish before the call's deadline: the call's deadline"},
		{"not started", context.Background(), Output{StartErr: errors.New("exec format error")}, agent.KindPluginCrash,
			"test CLI: start /bin/test-cli: exec format error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := testCLI.Failed(tt.ctx, tt.out, "/bin/test-cli")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Failed = %v, want nil", err)
				}
				return
			}
			var ae *agent.AskError
			if !errors.As(err, &ae) || ae.Kind != tt.kind || ae.Detail != tt.want {
				t.Errorf("Failed = %#v, want %s %q", err, tt.kind, tt.want)
			}
		})
	}
}

func TestCrashMasksAndClips(t *testing.T) {
	mask := secret.New([]string{"sk-secret"})
	tests := []struct {
		msg, stderr, want string
	}{
		{"exited with status 1 (key sk-secret)", "", "exited with status 1 (key REDACTED)"},
		{"exited with status 1", "auth sk-secret refused", "exited with status 1; stderr: auth REDACTED refused"},
	}
	for _, tt := range tests {
		var ae *agent.AskError
		if err := Crash(tt.msg, tt.stderr, mask); !errors.As(err, &ae) || ae.Kind != agent.KindPluginCrash || ae.Detail != tt.want {
			t.Errorf("Crash(%q, %q) = %v, want plugin_crash %q", tt.msg, tt.stderr, err, tt.want)
		}
	}
	long := strings.Repeat("x", 10*agent.QuoteLimit)
	var ae *agent.AskError
	if err := Crash(long, "", mask); !errors.As(err, &ae) || len(ae.Detail) >= len(long) {
		t.Errorf("a long message is not clipped: %d bytes", len(ae.Detail))
	}
}

func TestModelRefused(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"The model `gpt-9` does not exist", true},
		{"model gpt-9 is not supported when using Codex with a ChatGPT account", true},
		{"Model \"x\" not found", true},
		{"stream disconnected: not found", false},
		{"the model is busy", false},
	}
	for _, tt := range tests {
		if got := ModelRefused(tt.msg); got != tt.want {
			t.Errorf("ModelRefused(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

func TestConverseKey(t *testing.T) {
	call := func(session, persona, alias string) *agent.Call {
		c := agent.NewCall(&agent.AskRequest{SessionID: session, CallID: "c1", Verb: "converse"})
		c.Alias = alias
		if persona != "" {
			c.Persona = &agent.Persona{Name: persona}
		}
		return c
	}
	a := ConverseKey(call("s1", "ann", "agent.x"))
	if a != ConverseKey(call("s1", "ann", "agent.x")) {
		t.Error("the same session, persona and alias have two keys")
	}
	for _, other := range []*agent.Call{call("s2", "ann", "agent.x"), call("s1", "bob", "agent.x"), call("s1", "", "agent.x"), call("s1", "ann", "agent.y")} {
		if ConverseKey(other) == a {
			t.Errorf("%+v shares the key of s1/ann/agent.x", other.Request)
		}
	}
}

func TestHasSchema(t *testing.T) {
	for s, want := range map[string]bool{"": false, "  ": false, "null": false, " null\n": false, "{}": true, `{"type":"object"}`: true} {
		if got := HasSchema(json.RawMessage(s)); got != want {
			t.Errorf("HasSchema(%q) = %v, want %v", s, got, want)
		}
	}
}
