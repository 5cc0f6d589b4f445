package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/otlptest"
)

// spanTree renders the received spans as "parent > child" names, sorted,
// with the gen_ai attributes agent spans carry.
func spanTree(t *testing.T, spans []otlptest.Span) []string {
	t.Helper()
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var out []string
	for _, s := range spans {
		path := s.Name
		for p := s.ParentID; p != ""; p = byID[p].ParentID {
			parent, ok := byID[p]
			if !ok {
				t.Fatalf("span %q has parent %s, which was not exported", s.Name, p)
			}
			if parent.TraceID != s.TraceID {
				t.Fatalf("span %q is in trace %s, its parent in %s", s.Name, s.TraceID, parent.TraceID)
			}
			path = parent.Name + " > " + path
		}
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

func TestRunExportsOTLPSpans(t *testing.T) {
	for _, viaEnv := range []bool{false, true} {
		name := "flag"
		if viaEnv {
			name = "env"
		}
		t.Run(name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			args := []string{"run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "greet name=Ada style=formal,bye"}
			if viaEnv {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
			} else {
				args = append(args, "--otlp", rcv.URL)
			}
			code, out, errs := runCLI(t, "", args...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			if got := rcv.Paths(); len(got) == 0 || got[0] != "/v1/traces" {
				t.Fatalf("export paths = %v, want /v1/traces", got)
			}
			spans := rcv.Spans()
			want := []string{
				"kitsoki.session",
				"kitsoki.session > turn 1",
				"kitsoki.session > turn 1 > invoke host.agent.decide",
				"kitsoki.session > turn 1 > invoke host.agent.decide > invoke_agent greeter",
				"kitsoki.session > turn 2",
			}
			if diff := cmp.Diff(want, spanTree(t, spans)); diff != "" {
				t.Fatalf("span tree (-want +got):\n%s", diff)
			}
			for _, s := range spans {
				switch s.Name {
				case "kitsoki.session":
					if s.Attrs["kitsoki.app.id"] != "hello" || s.Attrs["kitsoki.session.id"] == "" {
						t.Errorf("session attrs = %v", s.Attrs)
					}
					if s.Resource["service.name"] != "kitsoki" {
						t.Errorf("resource = %v", s.Resource)
					}
				case "turn 1":
					if s.Attrs["kitsoki.intent"] != "greet" || s.Attrs["kitsoki.turn.outcome"] != "transitioned" {
						t.Errorf("turn attrs = %v", s.Attrs)
					}
					if _, ok := s.Attrs["kitsoki.turn.input"]; ok {
						t.Errorf("input exported without --otlp-content: %v", s.Attrs)
					}
				case "invoke_agent greeter":
					for k, v := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "greeter", "kitsoki.agent.verb": "decide"} {
						if s.Attrs[k] != v {
							t.Errorf("agent span %s = %v, want %v (attrs %v)", k, s.Attrs[k], v, s.Attrs)
						}
					}
					if _, ok := s.Attrs["gen_ai.response.model"]; !ok {
						t.Errorf("agent span has no gen_ai.response.model: %v", s.Attrs)
					}
					if _, ok := s.Attrs["gen_ai.input.messages"]; ok {
						t.Errorf("prompt exported without --otlp-content")
					}
				}
				if s.End.Before(s.Start) {
					t.Errorf("span %q ends before it starts", s.Name)
				}
			}
		})
	}
}

func TestRunOTLPContent(t *testing.T) {
	rcv := otlptest.Start(t)
	code, out, errs := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--intents", "greet name=Ada style=formal,bye", "--otlp", rcv.URL, "--otlp-content")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var agent *otlptest.Span
	for _, s := range rcv.Spans() {
		if s.Name == "invoke_agent greeter" {
			agent = &s
		}
	}
	if agent == nil {
		t.Fatal("no agent span")
	}
	in, _ := agent.Attrs["gen_ai.input.messages"].(string)
	outMsg, _ := agent.Attrs["gen_ai.output.messages"].(string)
	if !strings.Contains(in, "Ada") || !strings.Contains(in, `"role":"user"`) {
		t.Errorf("gen_ai.input.messages = %q", in)
	}
	if !strings.Contains(outMsg, "Good day, Ada") {
		t.Errorf("gen_ai.output.messages = %q", outMsg)
	}
}

func TestRunOTLPContentNeedsEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	code, _, errs := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "bye", "--otlp-content")
	if code != exitFailure || !strings.Contains(errs, "--otlp-content needs an endpoint: give --otlp URL or set OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
}

func TestRunOTLPFailedExportWarns(t *testing.T) {
	rcv := otlptest.Start(t)
	url := rcv.URL + "/nowhere" // the receiver answers 404 off /v1/traces
	code, _, errs := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "greet name=Ada,bye", "--otlp", url)
	if code != exitOK {
		t.Fatalf("a failed export changed the exit code: %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "warning: otlp export: ") || !strings.Contains(errs, "404") {
		t.Errorf("stderr does not warn about the failed export:\n%s", errs)
	}
}
