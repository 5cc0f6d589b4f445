package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// tutorialDoc is the tutorial whose commands TestTutorial runs.
const tutorialDoc = "../../docs/tutorial.md"

// A tutorial block is a fenced code block of docs/tutorial.md. Its info
// string is a language and markers:
//
//	```sh setup          run from the repository root with GOBIN set to the test's bin directory
//	```sh run            run in the tutorial's working directory (a cd carries over to the next block)
//	```sh run exit=4     the same, expecting exit code 4
//	```sh norun          shown, not run (it needs a model or a terminal)
//	```text output       the combined stdout and stderr of the block before it
//	```yaml file=PATH    written to PATH in the working directory
//
// An output line "..." stands for any number of lines, and "..." inside a
// line for any text. Trailing spaces do not count.
type tutorialBlock struct {
	line   int // where the fence opens, 1-based
	lang   string
	marks  map[string]string
	body   string
	output *tutorialBlock // the output block that follows a command block
}

func (b *tutorialBlock) has(mark string) bool { _, ok := b.marks[mark]; return ok }

// parseTutorial reads the fenced blocks of a Markdown file.
func parseTutorial(data []byte) ([]*tutorialBlock, error) {
	var blocks []*tutorialBlock
	var cur *tutorialBlock
	var body strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "```") {
			if cur != nil {
				body.WriteString(line + "\n")
			}
			continue
		}
		if cur != nil {
			cur.body = body.String()
			blocks, cur = append(blocks, cur), nil
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "```"))
		cur = &tutorialBlock{line: n, marks: map[string]string{}}
		body.Reset()
		for i, f := range fields {
			if i == 0 {
				cur.lang = f
				continue
			}
			k, v, _ := strings.Cut(f, "=")
			cur.marks[k] = v
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the fence is never closed", cur.line)
	}
	return blocks, nil
}

// tutorialSteps checks the marks and pairs each output block with the
// command block before it.
func tutorialSteps(blocks []*tutorialBlock) ([]*tutorialBlock, error) {
	var steps []*tutorialBlock
	var last *tutorialBlock
	for _, b := range blocks {
		switch {
		case b.has("output"):
			if last == nil || last.output != nil {
				return nil, fmt.Errorf("line %d: an output block must follow a run or setup block", b.line)
			}
			last.output = b
			continue
		case b.lang == "sh" || b.lang == "bash" || b.lang == "console":
			n := 0
			for _, m := range []string{"run", "setup", "norun"} {
				if b.has(m) {
					n++
				}
			}
			if n != 1 {
				return nil, fmt.Errorf("line %d: a shell block is marked run, setup or norun (exactly one)", b.line)
			}
		case b.has("file"):
		default:
			last = nil
			continue
		}
		last = nil
		if b.has("run") || b.has("setup") {
			last = b
		}
		steps = append(steps, b)
	}
	return steps, nil
}

// matchOutput reports whether got matches the expected lines ("..." as
// above).
func matchOutput(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matchOutput(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && matchOutput(want[1:], got[1:])
}

func lineMatches(want, got string) bool {
	if !strings.Contains(want, "...") {
		return want == got
	}
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

func outputLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return lines
}

// tutorialPath is PATH for the tutorial's commands: the test's bin
// directory first, then the test's own PATH without any directory that
// holds a claude program, so a machine with the Claude CLI installed runs
// the tutorial as one without it (the tutorial's model-free steps).
func tutorialPath(bin string) string {
	dirs := []string{bin}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(d, "claude")); err == nil && !fi.IsDir() {
			continue
		}
		dirs = append(dirs, d)
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

// TestTutorial runs every command of docs/tutorial.md from a clean
// temporary directory, with kitsoki built by the tutorial's own setup step
// (go install), and checks each command's output and exit code.
func TestTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kitsoki")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the tutorial's stand-in agent needs python3")
		}
		t.Skip("the tutorial's stand-in agent needs python3")
	}
	data, err := os.ReadFile(tutorialDoc)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseTutorial(data)
	if err != nil {
		t.Fatalf("%s: %v", tutorialDoc, err)
	}
	steps, err := tutorialSteps(blocks)
	if err != nil {
		t.Fatalf("%s: %v", tutorialDoc, err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin, home, work := filepath.Join(tmp, "bin"), filepath.Join(tmp, "home"), filepath.Join(tmp, "work")
	for _, d := range []string{bin, home, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := tutorialEnv(bin, home)
	cwd := work
	ran := 0
	for _, b := range steps {
		where := fmt.Sprintf("%s:%d", filepath.Base(tutorialDoc), b.line)
		switch {
		case b.has("file"):
			p := filepath.Join(cwd, b.marks["file"])
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
		case b.has("norun"):
		case b.has("setup"):
			runTutorialBlock(t, where, b, repo, append(env, "GOBIN="+bin))
			ran++
			if t.Failed() {
				return // nothing after it can run
			}
		case b.has("run"):
			cwd = runTutorialBlock(t, where, b, cwd, env)
			ran++
		}
	}
	if ran < 10 {
		t.Errorf("the tutorial ran %d command blocks; its steps are missing their run marks", ran)
	}
}

// tutorialEnv is the environment the tutorial's commands see: the test's
// own, with PATH as tutorialPath says, HOME in the test's directory and
// no sessions directory of the test's (sessions go where a user's would).
func tutorialEnv(bin, home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "KITSOKI_SESSIONS_DIR", "KITSOKI_TEST_AS_CLI", "GOBIN", "KITSOKI_GRAPHVIZ", "TERM", "NO_COLOR":
			continue
		}
		if strings.HasPrefix(k, "KITSOKI_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+tutorialPath(bin), "HOME="+home, "TERM=dumb", "NO_COLOR=1")
	// Go's caches and settings stay the test's own (they live under HOME
	// by default): the setup step builds from the warm cache, offline.
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOENV", "GOPATH"} {
		if v, err := exec.Command("go", "env", k).Output(); err == nil {
			env = append(env, k+"="+strings.TrimSpace(string(v)))
		}
	}
	return env
}

// runTutorialBlock runs one command block with bash in dir and checks its
// exit code and output; it returns the directory the block ended in.
func runTutorialBlock(t *testing.T, where string, b *tutorialBlock, dir string, env []string) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "pwd")
	script := "trap 'pwd > " + strconv.Quote(state) + "' EXIT\nset -e\n" + b.body
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	want := 0
	if s, ok := b.marks["exit"]; ok {
		if want, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s: exit=%q is not a number", where, s)
		}
	}
	if code != want {
		t.Errorf("%s: exit %d, want %d\n%s\noutput:\n%s", where, code, want, b.body, out.String())
	}
	if b.output != nil && !matchOutput(outputLines(b.output.body), outputLines(out.String())) {
		t.Errorf("%s: output differs\n%s\nwant:\n%s\ngot:\n%s", where, b.body, b.output.body, out.String())
	}
	next, err := os.ReadFile(state)
	if err != nil {
		return dir
	}
	return strings.TrimSpace(string(next))
}

// The tutorial's block marks and output matching are what TestTutorial
// relies on to fail.
func TestTutorialHarness(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb\n", true},
		{"a\nb", "a\nc", false},
		{"a\n...\nd", "a\nb\nc\nd", true},
		{"a\n...\nd", "a\nd", true},
		{"a\n...", "a", true},
		{"session ..., trace .../run.jsonl", "session 2026-x, trace /tmp/w/run.jsonl", true},
		{"session ..., trace .../run.jsonl", "session 2026-x, trace /tmp/w/run.json", false},
		{"a  ", "a", true},
		{"", "", true},
		{"", "x", false},
		{"x", "", false},
	} {
		if got := matchOutput(outputLines(tc.want), outputLines(tc.got)); got != tc.ok {
			t.Errorf("matchOutput(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
		}
	}
	doc := "```sh run\necho hi\n```\n```text output\nhi\n```\n```sh\nls\n```\n"
	blocks, err := parseTutorial([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tutorialSteps(blocks); err == nil || !strings.Contains(err.Error(), "line 7: a shell block is marked run, setup or norun") {
		t.Errorf("an unmarked shell block: %v", err)
	}
	if _, err := parseTutorial([]byte("```sh run\nls\n")); err == nil {
		t.Error("an unclosed fence is no error")
	}
	blocks, _ = parseTutorial([]byte("```text output\nhi\n```\n"))
	if _, err := tutorialSteps(blocks); err == nil {
		t.Error("an output block with no command before it is no error")
	}
	blocks, _ = parseTutorial([]byte(doc[:strings.Index(doc, "```sh\n")]))
	steps, err := tutorialSteps(blocks)
	if err != nil || len(steps) != 1 || steps[0].output == nil || steps[0].output.body != "hi\n" {
		t.Errorf("steps = %v, %v", steps, err)
	}
}
