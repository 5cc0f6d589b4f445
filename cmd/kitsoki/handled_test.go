package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

const handledApp = "testdata/handled-errors/app.yaml"

// The stderr lines of the failures on_error handles in handledApp.
const (
	handledAudit = "agent error: host.agent.decide (call audit, call_id 7c55868e3e10f248) schema_invalid: /: required: missing property 'nope' — on_error → intake"
	handledAgain = "agent error: host.agent.decide (call again, call_id 8e578d778a1bc819) schema_invalid: /: required: missing property 'nope' — on_error → intake (already there: nothing to redirect)"
	handledSlow  = `host error: host.agent.decide: with.timeout: "soon" is not a duration (write e.g. "90s" or 90) — on_error → intake (already there: nothing to redirect)`
)

// handledLines are the stderr lines that report a handled failure.
func handledLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "agent error: ") || strings.HasPrefix(l, "host error: ") {
			out = append(out, l)
		}
	}
	return out
}

// Every call failure an on_error handles is one stderr line, in scripted
// runs (--intents or stdin): the call, the kind and message, where the run
// went. The run goes on as the story says.
func TestRunShowsHandledErrors(t *testing.T) {
	cascade := []string{
		"agent error: host.agent.decide (call_id 31dfb93228490cb1) schema_invalid: /: required: missing property 'nope' — on_error → c2",
		"agent error: host.agent.decide (call_id 4b7ded81b60d4fc3) schema_invalid: /: required: missing property 'nope' — on_error → c3",
		"agent error: host.agent.decide (call_id fa2cd58b0c1c8e7a) schema_invalid: /: required: missing property 'nope' — on_error → c4",
		"agent error: host.agent.decide (call_id 01011a8a024b441f) schema_invalid: /: required: missing property 'nope' — on_error → c5",
		"agent error: host.agent.decide (call_id 9babf8fec0207385) schema_invalid: /: required: missing property 'nope' — on_error → c6 not followed: more than 4 chained on_error redirects",
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		lines []string
	}{
		{"--intents", "", []string{"--intents", "audit,retry,slow,done"}, exitOK, []string{handledAudit, handledAgain, handledSlow}},
		{"stdin script", "audit\ndone\n", nil, exitOK, []string{handledAudit}},
		{"redirect cap", "", []string{"--intents", "cascade"}, exitIncomplete, cascade},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", handledApp, "--session", "s1", "--trace", filepath.Join(t.TempDir(), "t.jsonl")}, tt.args...)
			code, out, errs := runCLI(t, tt.stdin, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if diff := cmp.Diff(tt.lines, handledLines(errs)); diff != "" {
				t.Errorf("handled error lines (-want +got):\n%s\nstderr:\n%s", diff, errs)
			}
		})
	}
}

// The terminal loop prints the same line.
func TestInteractiveShowsHandledErrors(t *testing.T) {
	st, err := story.Load(handledApp)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s1"},
		Trace: runtime.Trace{Path: filepath.Join(t.TempDir(), "t.jsonl")}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var out, errb bytes.Buffer
	con := &driver.Console{D: localDriver(rt), Out: &out, Err: &errb}
	con.Begin(context.Background())
	code := con.Prompt(context.Background(), driver.NewLines(strings.NewReader("audit\ndone\n")))
	if code != exitOK {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if diff := cmp.Diff([]string{handledAudit}, handledLines(errb.String())); diff != "" {
		t.Errorf("handled error lines (-want +got):\n%s\nstderr:\n%s", diff, errb.String())
	}
}
