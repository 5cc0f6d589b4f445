package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The views' command lines: what a user types, what comes back, the exit
// code.
func TestVizCommand(t *testing.T) {
	dir := t.TempDir()
	helper := filepath.Join(dir, "kitsoki-graphviz")
	if out, err := exec.Command("go", "build", "-o", helper, "github.com/kitsoki/kitsoki/cmd/kitsoki-graphviz").CombinedOutput(); err != nil {
		t.Fatalf("building kitsoki-graphviz: %v\n%s", err, out)
	}
	t.Setenv("KITSOKI_GRAPHVIZ", helper)
	png := filepath.Join(dir, "hello.png")
	svg := filepath.Join(dir, "hello.svg")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string // prefix
		stderr     string // whole
		wantFile   string
		fileHeader string
	}{
		{name: "mermaid by default", args: []string{"viz", hello}, stdout: "flowchart LR\n  %% Hello, kitsoki\n"},
		{name: "dot", args: []string{"viz", hello, "--format", "dot"}, stdout: "digraph \"Hello, kitsoki\" {\n"},
		{name: "png by extension", args: []string{"viz", hello, "-o", png}, stderr: "kitsoki: wrote " + png + " (png, 4 states)\n", wantFile: png, fileHeader: "\x89PNG"},
		{name: "svg", args: []string{"viz", hello, "--format", "svg", "-o", svg}, stderr: "kitsoki: wrote " + svg + " (svg, 4 states)\n", wantFile: svg, fileHeader: "<?xml"},
		{name: "no renderer", args: []string{"viz", hello, "-o", svg}, code: exitFailure,
			stderr: "kitsoki viz: rendering SVG or PNG needs the kitsoki-graphviz renderer beside kitsoki, on PATH or named by KITSOKI_GRAPHVIZ (make build builds bin/kitsoki-graphviz; go install ./cmd/kitsoki-graphviz); --format mermaid and dot need nothing\n"},
		{name: "unknown format", args: []string{"viz", hello, "--format", "jpeg"}, code: exitUsage,
			stderr: "kitsoki viz: --format \"jpeg\": unknown format (one of mermaid, dot, svg, png)\n"},
		{name: "png to a terminal", args: []string{"viz", hello, "--format", "png"}, code: exitUsage,
			stderr: "kitsoki viz: --format png writes an image: give -o FILE.png\n"},
		{name: "story that does not load", args: []string{"viz", "testdata/nope/app.yaml"}, code: exitLoad},
		{name: "highlight trace missing", args: []string{"viz", hello, "--highlight-trace", filepath.Join(dir, "none.jsonl")}, code: exitFailure,
			stderr: "kitsoki viz: --highlight-trace: read trace: open " + filepath.Join(dir, "none.jsonl") + ": no such file or directory\n"},
		{name: "highlight of another story", args: []string{"viz", hello, "--highlight-trace", "../../internal/view/traceview/testdata/failures.jsonl"},
			stdout: "flowchart LR", stderr: "kitsoki viz: warning: ../../internal/view/traceview/testdata/failures.jsonl: the run went through states this story does not have: auditing, triage (is the trace of another version of the story?)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no renderer" {
				t.Setenv("KITSOKI_GRAPHVIZ", "")
				t.Setenv("PATH", dir+"/none")
			}
			code, out, errs := runCLI(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, tc.code, errs)
			}
			if !strings.HasPrefix(out, tc.stdout) {
				t.Errorf("stdout = %.200q, want prefix %q", out, tc.stdout)
			}
			if tc.stderr != "" && errs != tc.stderr {
				t.Errorf("stderr = %q, want %q", errs, tc.stderr)
			}
			if tc.wantFile != "" {
				b, err := os.ReadFile(tc.wantFile)
				if err != nil || !strings.HasPrefix(string(b), tc.fileHeader) {
					t.Errorf("%s: %v, starts %.10q", tc.wantFile, err, b)
				}
			}
		})
	}
}

func TestTraceShowViewCommands(t *testing.T) {
	const rec = "../../internal/view/traceview/testdata/hello-run.jsonl"
	golden, err := os.ReadFile("../../internal/view/traceview/testdata/hello-run.show.golden")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "", "trace", "show", rec)
	want := strings.Replace(string(golden), "trace hello-run.jsonl ", "trace "+rec+" ", 1)
	if code != exitOK || out != want {
		t.Errorf("trace show: exit %d, stderr %q\nstdout:\n%s", code, errs, out)
	}
	t.Setenv("NO_COLOR", "1")
	if _, out, _ := runCLI(t, "", "trace", "show", rec); strings.Contains(out, "\x1b[") {
		t.Error("colour with NO_COLOR")
	}
	dir := t.TempDir()
	t.Setenv("KITSOKI_SESSIONS_DIR", dir)
	code, _, errs = runCLI(t, "", "trace", "show", "20990101T000000Z-none")
	if code != exitFailure || errs != "kitsoki trace show: 20990101T000000Z-none: no such trace file, and no session of that id in "+dir+" (kitsoki run writes "+dir+"/<session>.jsonl)\n" {
		t.Errorf("unknown session: exit %d, stderr %q", code, errs)
	}
	// A session id (or its start) names its journal in the sessions directory.
	if b, err := os.ReadFile(rec); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(dir, "20990101T000000Z-abcd.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "", "trace", "show", "20990101T000000Z-ab"); code != exitOK || !strings.Contains(out, "20990101T000000Z-abcd.jsonl") {
		t.Errorf("session id: exit %d, stderr %q\n%s", code, errs, out)
	}
	page := filepath.Join(t.TempDir(), "v.html")
	code, _, errs = runCLI(t, "", "trace", "view", rec, "-o", page)
	if code != exitOK || errs != "kitsoki: wrote "+page+" (4 turns, 2 host calls, 2 agent calls)\n" {
		t.Errorf("trace view: exit %d, stderr %q", code, errs)
	}
	b, _ := os.ReadFile(page)
	if !strings.HasPrefix(string(b), "<!DOCTYPE html>") || strings.Contains(string(b), "https://") || strings.Contains(string(b), "http://") {
		t.Errorf("trace view page: %.100q", b)
	}
	code, _, errs = runCLI(t, "", "trace", "view", rec, "--serve", "--addr", "nope")
	if code != exitUsage || !strings.HasPrefix(errs, "kitsoki trace view: --addr \"nope\": ") {
		t.Errorf("bad --addr: exit %d, stderr %q", code, errs)
	}
}

func TestEvalShowHTML(t *testing.T) {
	code, out, errs := runCLI(t, "", "eval", "show", "--html", "../../stories/hello/evals/reports/compose/latest.json")
	if code != exitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, `data-example="ada-casual"`) {
		t.Errorf("eval show --html: exit %d, stderr %q, %.100q", code, errs, out)
	}
	code, _, errs = runCLI(t, "", "eval", "show", "--html", "--md", "x.json")
	if code != exitUsage || errs != "kitsoki eval show: --html prints a page: give it without --json or --md\n" {
		t.Errorf("--html --md: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runCLI(t, "", "eval", "show", "--html", "../../stories/hello/evals/compose.yaml")
	if code != exitUsage || !strings.HasPrefix(errs, "kitsoki eval show: --html shows a report (report.json), not ") {
		t.Errorf("--html of a dataset: exit %d, stderr %q", code, errs)
	}
}

// TestTraceShowFollowRun follows a trace that a run creates, writes and
// closes while trace show --follow polls it: the follow ends by itself
// when the run closes the trace, having printed exactly the report.
func TestTraceShowFollowRun(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "run.jsonl")
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		var r res
		r.code, r.out, r.err = runCLI(t, "", "trace", "show", "--follow", "--poll", "10ms", tr)
		done <- r
	}()
	if code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--cassette", "../../stories/hello/cassettes/demo.yaml",
		"--intents", "greet name=Ada style=formal,again,greet name=Grace,bye"); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	r := <-done
	_, want, _ := runCLI(t, "", "trace", "show", tr)
	if r.code != exitOK || r.out != want {
		t.Errorf("follow: exit %d, stderr %q\ngot:\n%s\nwant:\n%s", r.code, r.err, r.out, want)
	}
}

// Drawing a story needs none of its secrets: viz draws a story whose
// agent headers name an unset variable (validate still refuses it).
func TestVizNeedsNoSecrets(t *testing.T) {
	const app = "../../stories/plugin-echo-mcp/app.yaml"
	t.Setenv("ECHO_MCP_TOKEN", "")
	os.Unsetenv("ECHO_MCP_TOKEN")
	code, out, errs := runCLI(t, "", "viz", app)
	if code != exitOK || !strings.HasPrefix(out, "flowchart LR\n") {
		t.Errorf("viz: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", "validate", app); code != exitLoad || !strings.Contains(errs, "ECHO_MCP_TOKEN") {
		t.Errorf("validate: exit %d\n%s", code, errs)
	}
}
