package eval

import (
	"bytes"
	"strings"
	"testing"
)

// Off a terminal, one plain line per call; on a terminal, a bar redrawn
// in place and a final newline.
func TestProgress(t *testing.T) {
	var plain bytes.Buffer
	p := NewProgress(&plain, false)
	p.Start(2)
	p.Done(CallReport{Candidate: "agent.a/m", Example: "e1", Repeat: 1, Pass: true})
	p.Done(CallReport{Candidate: "agent.a/m", Example: "e2", Repeat: 1, Reason: "field \"d\"\ngot x want y"})
	p.Finish()
	want := "eval: 2 calls\n[1/2] agent.a/m e1 #1: pass\n[2/2] agent.a/m e2 #1: fail (field \"d\" got x want y)\n"
	if plain.String() != want {
		t.Errorf("plain:\n%q\nwant\n%q", plain.String(), want)
	}

	var bar bytes.Buffer
	p = NewProgress(&bar, true)
	p.Start(4)
	p.Done(CallReport{Candidate: "agent.a/m", Pass: true})
	p.Done(CallReport{Candidate: "agent.a/m"})
	p.Finish()
	out := bar.String()
	if !strings.Contains(out, "\r\x1b[K[###############...............] 2/4 calls, 1 failed  agent.a/m") || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("bar output %q", out)
	}
}
