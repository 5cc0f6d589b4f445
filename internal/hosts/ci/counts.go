package ci

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// tally counts test results in a command's output as it is written,
// whatever the output's length (the log itself is capped). It knows the
// shapes of go test (text with -v, or -json), TAP summaries (node --test),
// cargo test, pytest and jest; seen is false when none matched.
type tally struct {
	passed, failed, skipped int
	seen                    bool
	rest                    []byte // a line not yet ended
	// summaries that give totals are added up per summary line (cargo
	// prints one per crate); TAP's are the last seen.
	tap map[string]int
}

func (t *tally) Write(p []byte) (int, error) {
	buf := append(t.rest, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		t.line(string(buf[:i]))
		buf = buf[i+1:]
	}
	t.rest = append(t.rest[:0], buf...)
	return len(p), nil
}

// finish reads a last line without a newline and folds in the TAP totals.
func (t *tally) finish() {
	if len(t.rest) > 0 {
		t.line(string(t.rest))
		t.rest = nil
	}
	if t.tap != nil {
		t.passed += t.tap["pass"]
		t.failed += t.tap["fail"]
		t.skipped += t.tap["skip"] + t.tap["todo"]
		t.seen, t.tap = true, nil
	}
}

var (
	goLine     = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): `)
	tapLine    = regexp.MustCompile(`^# (pass|fail|skip|todo) (\d+)\s*$`)
	cargoLine  = regexp.MustCompile(`^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored`)
	pytestLine = regexp.MustCompile(`^=+ (.*\d+ (?:passed|failed|skipped|errors?).*) in [\d.]+s`)
	jestLine   = regexp.MustCompile(`^Tests:\s+(.*\d+ total)`)
	countPart  = regexp.MustCompile(`(\d+) (passed|failed|skipped|errors?|todo)`)
)

func (t *tally) line(l string) {
	l = strings.TrimRight(l, "\r")
	if strings.HasPrefix(l, "{") && strings.Contains(l, `"Action"`) {
		var ev goEvent
		if json.Unmarshal([]byte(l), &ev) == nil {
			t.event(ev)
			return
		}
	}
	if m := goLine.FindStringSubmatch(l); m != nil {
		t.add(strings.ToLower(m[1]))
		return
	}
	if m := tapLine.FindStringSubmatch(l); m != nil {
		if t.tap == nil {
			t.tap = map[string]int{}
		}
		t.tap[m[1]], _ = strconv.Atoi(m[2])
		return
	}
	if m := cargoLine.FindStringSubmatch(l); m != nil {
		p, _ := strconv.Atoi(m[1])
		f, _ := strconv.Atoi(m[2])
		s, _ := strconv.Atoi(m[3])
		t.passed, t.failed, t.skipped, t.seen = t.passed+p, t.failed+f, t.skipped+s, true
		return
	}
	for _, re := range []*regexp.Regexp{pytestLine, jestLine} {
		if m := re.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			for _, c := range countPart.FindAllStringSubmatch(m[1], -1) {
				n, _ := strconv.Atoi(c[1])
				switch c[2] {
				case "passed":
					t.passed += n
				case "failed", "error", "errors":
					t.failed += n
				case "skipped", "todo":
					t.skipped += n
				}
			}
			t.seen = true
			return
		}
	}
}

// add counts one test by go test's word for it.
func (t *tally) add(action string) {
	switch action {
	case "pass":
		t.passed++
	case "fail":
		t.failed++
	case "skip":
		t.skipped++
	default:
		return
	}
	t.seen = true
}

// goEvent is one line of go test -json.
type goEvent struct {
	Action, Test, Output string
}

func (t *tally) event(ev goEvent) {
	if ev.Test != "" {
		t.add(ev.Action)
	}
}

// goJSON turns go test -json's events into go test's own text (the
// events' Output) for the log, and counts the tests from the events.
type goJSON struct {
	log  io.Writer
	t    *tally
	rest []byte
}

func (g *goJSON) Write(p []byte) (int, error) {
	buf := append(g.rest, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		g.line(buf[:i+1])
		buf = buf[i+1:]
	}
	g.rest = append(g.rest[:0], buf...)
	return len(p), nil
}

func (g *goJSON) line(b []byte) {
	var ev goEvent
	if bytes.HasPrefix(b, []byte("{")) && json.Unmarshal(b, &ev) == nil && ev.Action != "" {
		g.t.event(ev)
		if ev.Output != "" {
			io.WriteString(g.log, ev.Output)
		}
		return
	}
	g.log.Write(b) // a build error, or anything else go prints as text
}

func (g *goJSON) finish() {
	if len(g.rest) > 0 {
		g.line(g.rest)
		g.rest = nil
	}
}

// junitCounts reads a JUnit XML report: its testcase elements counted, or
// for a suite that lists none the totals of its attributes (tests,
// failures, errors, skipped). ok is false when it is not JUnit.
func junitCounts(data []byte) (passed, failed, skipped int, ok bool) {
	type testcase struct {
		Failure *struct{} `xml:"failure"`
		Error   *struct{} `xml:"error"`
		Skipped *struct{} `xml:"skipped"`
	}
	type suite struct {
		Tests    *int       `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Errors   int        `xml:"errors,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
		Suites   []suite    `xml:"testsuite"`
	}
	var root struct {
		XMLName xml.Name
		suite
	}
	if err := xml.Unmarshal(data, &root); err != nil {
		return 0, 0, 0, false
	}
	if root.XMLName.Local != "testsuites" && root.XMLName.Local != "testsuite" {
		return 0, 0, 0, false
	}
	var walk func(s suite)
	walk = func(s suite) {
		if s.Tests != nil && len(s.Suites) == 0 && len(s.Cases) == 0 {
			bad := s.Failures + s.Errors
			passed += *s.Tests - bad - s.Skipped
			failed += bad
			skipped += s.Skipped
			return
		}
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil || c.Error != nil:
				failed++
			case c.Skipped != nil:
				skipped++
			default:
				passed++
			}
		}
		for _, sub := range s.Suites {
			walk(sub)
		}
	}
	walk(root.suite)
	return passed, failed, skipped, true
}

// inlineJUnit finds a JUnit report printed in the output.
func inlineJUnit(out string) ([]byte, bool) {
	i := strings.Index(out, "<?xml")
	if i < 0 {
		if i = strings.Index(out, "<testsuites"); i < 0 {
			if i = strings.Index(out, "<testsuite"); i < 0 {
				return nil, false
			}
		}
	}
	return []byte(out[i:]), true
}
