package evalview

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/check/eval"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestBuild(t *testing.T) {
	r, err := eval.ReadReport("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	p := Build(r)
	if d := cmp.Diff([]string{"bus-ticket", "hotel", "taxi", "team-dinner"}, p.Examples); d != "" {
		t.Errorf("examples (-want +got):\n%s", d)
	}
	fast := p.Rows[0]
	if fast.Cells[2].Pass || fast.Cells[2].Hover != "verdict: want \"flag\", got \"ok\"\nanswer: {\"verdict\":\"ok\",\"why\":\"<looks fine>\"}" {
		t.Errorf("fast/taxi = %+v", fast.Cells[2])
	}
	if fast.Low != 0.2152 || fast.High != 0.7848 {
		t.Errorf("fast interval = [%v, %v]", fast.Low, fast.High)
	}
	if old := p.Rows[2]; old.Cells[3].Known || old.Cells[3].Hover != "not run for this candidate" ||
		old.Cells[2].Hover != "failed on at least one repeat (the report keeps no sample of this answer)" {
		t.Errorf("old = %+v", old.Cells)
	}
	// Without a stored interval, it is computed: Wilson(3, 4).
	if w := eval.Wilson(3, 4); p.Rows[2].Low != w.Low || p.Rows[2].High != w.High {
		t.Errorf("old interval = [%v, %v], want %+v", p.Rows[2].Low, p.Rows[2].High, w)
	}
	if !p.Rows[1].Selected || p.Rows[0].Selected {
		t.Error("the decision's candidate is the selected row")
	}
}

func TestHTMLGolden(t *testing.T) {
	r, err := eval.ReadReport("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, bad := range []string{"http://", "https://", "<script src", "<link"} {
		if strings.Contains(got, bad) {
			t.Errorf("the page refers outside itself: %q", bad)
		}
	}
	if strings.Contains(got, "<looks fine>") {
		t.Error("an answer was not escaped")
	}
	if *update {
		os.WriteFile("testdata/report.html.golden", buf.Bytes(), 0o644)
	}
	want, err := os.ReadFile("testdata/report.html.golden")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("page differs (-want +got):\n%s", d)
	}
}

// A bidi override in a sample answer is shown as a mark, not obeyed.
func TestHTMLShowsBidiControls(t *testing.T) {
	r, err := eval.ReadReport("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.FailureSamples {
		r.FailureSamples[i].Reason += " \u202egnp.exe"
	}
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(buf.String(), 0x202e) || !strings.Contains(buf.String(), "[U+202E RLO]gnp.exe") {
		t.Errorf("the page holds U+202E raw or lacks its mark")
	}
}
