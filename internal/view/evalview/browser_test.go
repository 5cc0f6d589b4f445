package evalview

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/testsupport/browser"
)

// TestBrowserMatrix loads eval show --html's page in headless Chromium:
// a row per candidate, a cell per example, hovering a failing cell shows
// the answer.
func TestBrowserMatrix(t *testing.T) {
	ctx := browser.New(t)
	r, err := eval.ReadReport("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "matrix.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("#matrix"))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sel  string
		want int
	}{
		{"tr.candidate", 3}, {"td.cell", 12}, {"td.cell.pass", 8}, {"td.cell.fail", 3}, {"td.cell.unknown", 1}, {"tr.selected", 1},
	} {
		if got := browser.Eval[int](t, ctx, `document.querySelectorAll("`+tc.sel+`").length`); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.sel, got, tc.want)
		}
	}
	if got := browser.Eval[string](t, ctx, `document.querySelector("tr.candidate .rate").textContent`); got != "50.0% 4/8 · [21.5%, 78.5%]" {
		t.Errorf("fast pass rate = %q", got)
	}
	rect := browser.Eval[[]float64](t, ctx, `(() => { const r = document.querySelector('tr.candidate td.cell[data-example="taxi"]').getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`)
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, rect[0], rect[1])); err != nil {
		t.Fatal(err)
	}
	browser.WaitFor(t, ctx, `getComputedStyle(document.querySelector('tr.candidate td.cell[data-example="taxi"]'), '::after').content.includes("answer:")`)
	tip := browser.Eval[string](t, ctx, `getComputedStyle(document.querySelector('tr.candidate td.cell[data-example="taxi"]'), '::after').content`)
	if !strings.Contains(tip, `verdict: want \"flag\", got \"ok\"`) || !strings.Contains(tip, `<looks fine>`) {
		t.Errorf("hover shows %s", tip)
	}
	browser.Screenshot(t, ctx, "eval-matrix.png")
}
