package traceview

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kitsoki/kitsoki/internal/testsupport/browser"
)

func countCalls(r *Run) (host, agent int) {
	var walk func(cs []*Call)
	walk = func(cs []*Call) {
		for _, c := range cs {
			if c.Type == "host" {
				host++
			} else {
				agent++
			}
			walk(c.Children)
		}
	}
	for _, t := range r.Turns {
		for _, it := range t.Items {
			if it.Call != nil {
				walk([]*Call{it.Call})
			}
		}
	}
	return host, agent
}

// TestBrowserTraceView loads trace view's page of a recorded run in
// headless Chromium: every turn and call is drawn, a click on an agent
// call shows its prompt and answer, search narrows the turns.
func TestBrowserTraceView(t *testing.T) {
	ctx := browser.New(t)
	r, err := Load("testdata/hello-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "view.html")
	var buf bytes.Buffer
	if err := HTML(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	browser.WaitFor(t, ctx, `document.body.dataset.ready === "1"`)
	host, agent := countCalls(r)
	if got := browser.Eval[int](t, ctx, `document.querySelectorAll("#timeline .turn").length`); got != len(r.Turns) {
		t.Errorf("turns drawn = %d, want %d", got, len(r.Turns))
	}
	if got := browser.Eval[int](t, ctx, `document.querySelectorAll("#timeline .span.host").length`); got != host || host != 2 {
		t.Errorf("host spans = %d, want %d (2)", got, host)
	}
	if got := browser.Eval[int](t, ctx, `document.querySelectorAll("#timeline .span.agent").length`); got != agent || agent != 2 {
		t.Errorf("agent spans = %d, want %d (2)", got, agent)
	}
	// Spans are sized by duration: the 1840 ms call is wider than the 960 ms one.
	if w := browser.Eval[[]float64](t, ctx, `Array.from(document.querySelectorAll(".span.agent")).map(s => s.getBoundingClientRect().width)`); len(w) != 2 || !(w[0] > w[1]) {
		t.Errorf("agent span widths = %v, want the first wider", w)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.span.agent[data-turn="3"]`))); err != nil {
		t.Fatal(err)
	}
	browser.WaitFor(t, ctx, `document.querySelector("#detail pre.prompt") !== null`)
	if got := browser.Eval[string](t, ctx, `document.querySelector("#detail pre.prompt").textContent`); got != "Greet Grace in a casual register.\nAnswer with the greeting text, its tone, and done=true.\n" {
		t.Errorf("prompt shown = %q", got)
	}
	if got := browser.Eval[string](t, ctx, `document.querySelector("#detail pre.answer").textContent`); !bytes.Contains([]byte(got), []byte(`"text": "Hey Grace, good to see you!"`)) {
		t.Errorf("answer shown = %q", got)
	}
	if got := browser.Eval[string](t, ctx, `document.querySelector("#detail .verdict-valid").textContent`); got != "valid" {
		t.Errorf("schema verdict = %q", got)
	}
	if got := browser.Eval[string](t, ctx, `document.querySelector(".total-cost").textContent`); got != "$0.00283" {
		t.Errorf("total cost = %q", got)
	}
	// The recorded run's header predates the session fields: nothing shown.
	if got := browser.Eval[string](t, ctx, `document.getElementById("session").textContent`); got != "" {
		t.Errorf("session line of an old header = %q, want empty", got)
	}
	browser.Screenshot(t, ctx, "trace-view.png")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#search"), "grace")); err != nil {
		t.Fatal(err)
	}
	browser.WaitFor(t, ctx, `document.querySelectorAll("#timeline .turn:not(.hidden)").length === 1`)
	if got := browser.Eval[string](t, ctx, `document.querySelector("#timeline .turn:not(.hidden)").dataset.turn`); got != "3" {
		t.Errorf("search grace shows turn %s, want 3", got)
	}
}

// TestBrowserTraceViewHeader: the page's header names the session as the
// trace header does (id, app, story, hash, kitsoki version, fork).
func TestBrowserTraceViewHeader(t *testing.T) {
	ctx := browser.New(t)
	b, err := os.ReadFile("testdata/hello-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(b, []byte("\n"))
	hdr := `{"kind":"session.header","schema_version":1,"written_at":"2026-12-01T13:29:31.632802723Z","app_id":"hello","story_path":"stories/hello/app.yaml",` +
		`"story_hash":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","kitsoki_version":"v1.2.3","session_id":"20261201T132931Z-feedbeef",` +
		`"forked_from":"20261201T120000Z-00c0ffee","forked_at_turn":2}` + "\n"
	dir := t.TempDir()
	tr := filepath.Join(dir, "run.jsonl")
	if err := os.WriteFile(tr, append([]byte(hdr), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(tr)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := HTML(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "view.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	browser.WaitFor(t, ctx, `document.body.dataset.ready === "1"`)
	want := "session 20261201T132931Z-feedbeef  ·  app hello  ·  story stories/hello/app.yaml  ·  sha256:0123456789ab…  ·  kitsoki v1.2.3  ·  forked from 20261201T120000Z-00c0ffee at turn 2"
	if got := browser.Eval[string](t, ctx, `document.getElementById("session").textContent`); got != want {
		t.Errorf("session line = %q, want %q", got, want)
	}
	if got := browser.Eval[int](t, ctx, `document.querySelectorAll("#timeline .turn").length`); got != len(r.Turns) {
		t.Errorf("turns drawn = %d, want %d", got, len(r.Turns))
	}
}

// TestBrowserServeLive serves a trace that grows while the page is open:
// the page draws the new turns and calls, and stops polling once the
// writer lets go.
func TestBrowserServeLive(t *testing.T) {
	ctx := browser.New(t)
	full, err := os.ReadFile("testdata/failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(full, []byte(`{"turn":1,"seq":0,`))
	path := filepath.Join(t.TempDir(), "live.jsonl")
	if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	var writing atomic.Bool
	writing.Store(true)
	srv := httptest.NewServer((&Server{Path: path, Writing: func(string) bool { return writing.Load() }}).Handler())
	defer srv.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	browser.WaitFor(t, ctx, `document.body.dataset.ready === "1"`)
	if got := browser.Eval[int](t, ctx, `document.querySelectorAll("#timeline .turn").length`); got != 1 {
		t.Fatalf("turns before the run went on = %d, want 1", got)
	}
	if got := browser.Eval[string](t, ctx, `document.getElementById("live").textContent`); got != "● live" {
		t.Errorf("live marker = %q", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(full[cut:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	browser.WaitFor(t, ctx, `document.querySelectorAll("#timeline .turn").length === 4`)
	if got := browser.Eval[int](t, ctx, `document.querySelectorAll("#timeline .span").length`); got != 3 {
		t.Errorf("calls drawn after the append = %d, want 3", got)
	}
	if got := browser.Eval[int](t, ctx, `document.querySelectorAll("#timeline .span.error").length`); got != 2 {
		t.Errorf("failed calls drawn = %d, want 2 (the host call and its agent call)", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.span.agent.error`))); err != nil {
		t.Fatal(err)
	}
	browser.WaitFor(t, ctx, `document.querySelector("#detail pre.prompt") !== null`)
	if got := browser.Eval[string](t, ctx, `document.querySelector("#detail pre.prompt").textContent`); got != "Audit the taxi receipt. Token: REDACTED" {
		t.Errorf("prompt shown = %q", got)
	}
	if got := browser.Eval[string](t, ctx, `document.querySelector("#detail pre.subevents").textContent`); got != `tool.used {"args":{"item":"taxi"},"tool":"lookup_policy"}` {
		t.Errorf("sub-events shown = %q", got)
	}
	writing.Store(false)
	browser.WaitFor(t, ctx, `document.getElementById("live").textContent === ""`)
	browser.Screenshot(t, ctx, "trace-serve.png")
}
