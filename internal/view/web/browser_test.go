package web

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/kitsoki/kitsoki/internal/testsupport/browser"
	"github.com/kitsoki/kitsoki/internal/testsupport/corpus"
	"github.com/kitsoki/kitsoki/internal/view/viz"
	"github.com/kitsoki/kitsoki/internal/view/viz/gvrender"
)

// svgRender renders the diagram in the test process with Graphviz
// compiled to WebAssembly (kitsoki web runs cmd/kitsoki-graphviz for it);
// one instance for the package, one render at a time.
var svgRender = sync.OnceValue(func() viz.RenderFunc {
	var mu sync.Mutex
	var r *gvrender.Renderer
	return func(ctx context.Context, dot string, f viz.Format) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if r == nil {
			var err error
			if r, err = gvrender.NewRenderer(context.Background()); err != nil {
				return nil, err
			}
		}
		return r.Render(ctx, dot, string(f))
	}
})

// tab is a browser tab on a test server.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func newTab(t *testing.T) *tab {
	ctx := browser.New(t)
	tb := &tab{t: t, ctx: ctx}
	tb.viewport(1280, 800)
	return tb
}

func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatal(err)
	}
}

func (tb *tab) viewport(w, h int64, opts ...chromedp.EmulateViewportOption) {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(w, h, opts...))
}

// wait polls expr until it is truthy. It has no deadline of its own
// (go test -timeout bounds it); a poll cut short because the page
// navigated meanwhile is polled again in the new page.
func (tb *tab) wait(expr string) {
	tb.t.Helper()
	for range 50 {
		_, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(0)))
		if err == nil {
			return
		}
		if tb.ctx.Err() != nil {
			tb.t.Fatalf("waiting for %s: %v", expr, err)
		}
		tb.t.Logf("polling %s again: %v", expr, err)
	}
	tb.t.Fatalf("waiting for %s: the poll kept failing", expr)
}

func (tb *tab) str(expr string) string {
	tb.t.Helper()
	return browser.Eval[string](tb.t, tb.ctx, expr)
}

func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do(chromedp.Click(chromedp.CSS(sel)))
}

func (tb *tab) typeIn(sel, text string) {
	tb.t.Helper()
	tb.do(chromedp.SendKeys(chromedp.CSS(sel), text))
}

func (tb *tab) shot(name string) { browser.Screenshot(tb.t, tb.ctx, name) }

// ready waits for the session page to show state and take input.
func (tb *tab) ready(state string) {
	tb.t.Helper()
	tb.wait(fmt.Sprintf(`document.body.dataset.ready === "session" && document.body.dataset.state === %q && document.body.dataset.busy === "" && !document.getElementById("controls").disabled`, state))
}

// turnOf is the session's turn as the page shows it.
func (tb *tab) turnOf() int {
	tb.t.Helper()
	return browser.Eval[int](tb.t, tb.ctx, `Number(document.body.dataset.turn)`)
}

// readyAfter waits, as ready does, for state at a turn past turn: the
// wait of a turn that may leave the state where it was.
func (tb *tab) readyAfter(state string, turn int) {
	tb.t.Helper()
	tb.wait(fmt.Sprintf(`Number(document.body.dataset.turn) > %d`, turn))
	tb.ready(state)
}

// saidLast is the text of the transcript's last say.
func (tb *tab) saidLast() string {
	return tb.str(`(function(){ var s = document.querySelectorAll('#transcript .entry.say .text'); return s.length ? s[s.length-1].textContent : ""; })()`)
}

// noOverflow: the page is no wider than the window (nothing to scroll
// sideways).
func (tb *tab) noOverflow() {
	tb.t.Helper()
	if w := browser.Eval[int](tb.t, tb.ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		tb.t.Errorf("the page is %d px wider than the window", w)
	}
}

// TestBrowserDemo plays the demo story (stories/hello with its cassette)
// in headless Chromium: start a session from the home page, an intent
// button with its slot form (an enum picker), free text, the diagram, a
// slow call cancelled, a fork, a reload, the trace and eval panes, the
// keyboard, a server restart, both window sizes.
func TestBrowserDemo(t *testing.T) {
	tb := newTab(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	o := serverOpts{stories: []string{helloApp}, cassettes: map[string]string{helloApp: slowCassette(t)}, dir: dir, render: svgRender()}
	ts := startServer(t, o)
	tb.do(chromedp.Navigate(ts.URL + "/?token=" + ts.Token))
	tb.wait(`document.body.dataset.ready === "home"`)
	if got := tb.str(`location.search`); got != "" {
		t.Errorf("the token stays in the address: %q", got)
	}
	tb.shot("home.png")
	tb.click(`button[data-start="hello"]`)
	tb.wait(`location.pathname.startsWith("/s/")`)
	tb.ready("lobby")
	id := strings.TrimPrefix(tb.str(`location.pathname`), "/s/")

	// An intent button opens its slot form; style is an enum picker.
	tb.click(`#intents button[data-intent="greet"]`)
	tb.wait(`document.activeElement && document.activeElement.name === "name"`)
	if got := tb.str(`Array.from(document.querySelectorAll('form.slots select[name="style"] option')).map(o => o.value).join(",")`); got != "casual,formal" {
		t.Errorf("style picker offers %q", got)
	}
	if got := tb.str(`document.querySelector('form.slots select[name="style"]').value`); got != "casual" {
		t.Errorf("style picker starts at %q, want the default casual", got)
	}
	tb.typeIn(`form.slots input[name="name"]`, "Ada")
	tb.do(chromedp.SetValue(chromedp.CSS(`form.slots select[name="style"]`), "formal"))
	tb.shot("slot-form.png")
	tb.click(`form.slots button[type="submit"]`)
	tb.ready("greeted")
	if got := tb.saidLast(); got != "Good day, Ada. It is a pleasure to make your acquaintance." {
		t.Errorf("said %q", got)
	}
	if got := tb.str(`document.getElementById("view").innerText`); got != "Ada was greeted (formal)." {
		t.Errorf("view = %q", got)
	}
	// The diagram: an SVG of the graph, and the states with the path.
	tb.wait(`document.getElementById("diagram") && document.getElementById("diagram").complete && document.getElementById("diagram").naturalWidth > 100`)
	if got := tb.str(`document.querySelector("#states li.current").dataset.state`); got != "greeted" {
		t.Errorf("current state in the list = %q", got)
	}
	if got := tb.str(`Array.from(document.querySelectorAll("#states li.visited")).map(l => l.dataset.state).sort().join(",")`); got != "greeted,greeting,lobby" {
		t.Errorf("visited states = %q", got)
	}
	tb.shot("greeted.png")

	// Free text in the box, routed as the terminal routes it.
	tb.click(`#intents button[data-intent="again"]`)
	tb.ready("lobby")
	tb.typeIn(`#line`, "greet Grace"+kb.Enter)
	tb.ready("greeted")
	if got := tb.saidLast(); got != "Hey Grace, good to see you!" {
		t.Errorf("said %q", got)
	}
	if got := tb.str(`document.querySelector('#transcript .entry.input:last-of-type .note') ? document.querySelector('#transcript .entry.input:last-of-type .note').textContent : Array.from(document.querySelectorAll('#transcript .entry.input .note')).pop().textContent`); got != "→ greet (verb_value, 1.00)" {
		t.Errorf("routing note = %q", got)
	}

	// A slow call: shown live, then cancelled.
	tb.click(`#intents button[data-intent="again"]`)
	tb.ready("lobby")
	tb.click(`#intents button[data-intent="greet"]`)
	tb.typeIn(`form.slots input[name="name"]`, "Linus"+kb.Enter)
	tb.wait(`document.querySelector('#calls li.call[data-handler="host.agent.decide"]') !== null`)
	if got := tb.str(`document.querySelector("#calls li.call").textContent`); !strings.Contains(got, "agent.demo (host.agent.decide)") {
		t.Errorf("call shown = %q", got)
	}
	if !browser.Eval[bool](t, tb.ctx, `document.getElementById("controls").disabled`) {
		t.Error("the inputs stay enabled while a turn runs")
	}
	tb.shot("slow-call.png")
	tb.click(`#cancel`)
	tb.ready("lobby")
	if got := tb.str(`Array.from(document.querySelectorAll('#transcript .entry.error')).pop().textContent`); !strings.Contains(got, "call cancelled") {
		t.Errorf("the cancelled call's entry = %q", got)
	}

	// The keyboard: "/" focuses the box; Escape closes a slot form and
	// gives the focus back to its button; arrows move between panes.
	tb.do(chromedp.Focus(chromedp.CSS(`#tab-diagram`)), chromedp.KeyEvent("/"))
	if got := tb.str(`document.activeElement.id`); got != "line" {
		t.Errorf("after /, the focus is on %q", got)
	}
	tb.click(`#intents button[data-intent="greet"]`)
	tb.wait(`document.querySelector("form.slots") !== null`)
	tb.do(chromedp.KeyEvent(kb.Escape))
	tb.wait(`document.querySelector("form.slots") === null`)
	if got := tb.str(`document.activeElement.dataset.intent || ""`); got != "greet" {
		t.Errorf("after Escape, the focus is on %q", got)
	}
	tb.do(chromedp.Focus(chromedp.CSS(`#tab-diagram`)), chromedp.KeyEvent(kb.ArrowRight))
	if got := tb.str(`document.activeElement.id + " " + document.getElementById("pane-trace").hidden`); got != "tab-trace false" {
		t.Errorf("after ArrowRight: %q", got)
	}
	// The trace pane is trace view's page of the session's journal.
	tb.wait(`(function(){ var f = document.getElementById("trace-frame"); return f && f.contentDocument && f.contentDocument.body && f.contentDocument.body.dataset.ready === "1"; })()`)
	if n := browser.Eval[int](t, tb.ctx, `document.getElementById("trace-frame").contentDocument.querySelectorAll("#timeline .turn").length`); n < 6 {
		t.Errorf("the trace pane shows %d turns", n)
	}
	tb.shot("trace-pane.png")
	// The evals pane: the story's eval report.
	tb.click(`#tab-evals`)
	tb.click(`button[data-eval="compose"]`)
	tb.wait(`(function(){ var f = document.querySelector("#eval-frame iframe"); return f && f.contentDocument && f.contentDocument.title === "kitsoki eval compose"; })()`)
	tb.shot("evals-pane.png")
	tb.click(`#tab-diagram`)

	// Fork at turn 1: a new session in the state turn 1 left.
	tb.do(chromedp.SetValue(chromedp.CSS(`#fork-at`), "1"))
	tb.click(`#fork`)
	tb.wait(`location.pathname !== "/s/` + id + `"`)
	tb.ready("greeted")
	fork := strings.TrimPrefix(tb.str(`location.pathname`), "/s/")
	if got := tb.str(`document.getElementById("statebar").innerText`); !strings.Contains(got, "forked from "+id+" at turn 1") {
		t.Errorf("the fork's header = %q", got)
	}
	entries := tb.str(`document.body.dataset.entries`)

	// Reload and go on.
	tb.do(chromedp.Reload())
	tb.ready("greeted")
	if got := tb.str(`document.body.dataset.entries`); got != entries {
		t.Errorf("entries after the reload = %s, want %s", got, entries)
	}
	tb.click(`#intents button[data-intent="bye"]`)
	tb.wait(`document.body.dataset.state === "farewell" && document.body.dataset.busy === ""`)
	if !browser.Eval[bool](t, tb.ctx, `document.getElementById("controls").disabled`) {
		t.Error("the inputs stay enabled in a terminal state")
	}
	tb.shot("fork-farewell.png")

	// The server stops; another starts on the same sessions directory
	// and address: the first session's page reloads and goes on.
	addr := strings.TrimPrefix(ts.URL, "http://")
	ts.stop(t)
	o.addr, o.token = addr, ts.Token
	ts2 := startServer(t, o)
	tb.do(chromedp.Navigate(ts2.URL + "/s/" + id))
	tb.ready("lobby")
	if n := browser.Eval[int](t, tb.ctx, `document.querySelectorAll("#transcript .entry.input").length`); n != 5 {
		t.Errorf("inputs in the transcript after the restart = %d, want 5", n)
	}
	tb.click(`#intents button[data-intent="bye"]`)
	tb.wait(`document.body.dataset.state === "farewell" && document.body.dataset.busy === ""`)

	// The home page lists both sessions; a phone-sized window.
	tb.do(chromedp.Navigate(ts2.URL + "/"))
	tb.wait(`document.body.dataset.ready === "home"`)
	for _, s := range []string{id, fork} {
		if !browser.Eval[bool](t, tb.ctx, fmt.Sprintf(`document.querySelector('tr[data-session=%q]') !== null`, s)) {
			t.Errorf("session %s is not listed", s)
		}
	}
	tb.viewport(390, 844, chromedp.EmulateMobile)
	tb.noOverflow()
	tb.shot("home-390.png")
	tb.do(chromedp.Navigate(ts2.URL + "/s/" + fork))
	tb.wait(`document.body.dataset.ready === "session" && document.body.dataset.state === "farewell"`)
	tb.noOverflow()
	tb.shot("session-390.png")
}

// TestBrowserCorpus plays two of Kitsoki's corpus stories, served
// together, no agent or model in either: Cloak of Darkness
// (testdata/apps/cloak) through intent buttons, the go intent's slot form
// with its enum picker, free text, a fork, a reload and going on to the
// end; and proposal_smoke, whose views are choice widgets: an item with a
// field, picked choices.
func TestBrowserCorpus(t *testing.T) {
	dir := t.TempDir()
	cloak := filepath.Join(corpus.CopyApp(t, dir, "testdata/apps/cloak"), "app.yaml")
	proposal := filepath.Join(corpus.CopyApp(t, dir, "testdata/apps/proposal_smoke"), "app.yaml")
	tb := newTab(t)
	ts := startServer(t, serverOpts{stories: []string{cloak, proposal}, render: svgRender()})
	tb.do(chromedp.Navigate(ts.URL + "/?token=" + ts.Token))
	tb.wait(`document.body.dataset.ready === "home"`)
	tb.click(`button[data-start="cloak"]`)
	tb.wait(`location.pathname.startsWith("/s/")`)
	tb.ready("foyer")
	id := strings.TrimPrefix(tb.str(`location.pathname`), "/s/")
	if got := tb.str(`document.querySelector("#view h3.el-heading").textContent`); got != "FOYER" {
		t.Errorf("heading = %q", got)
	}
	if got := tb.str(`document.getElementById("line").placeholder`); got != "Type an intent (go direction=…) or say something" {
		t.Errorf("the box's placeholder = %q", got)
	}

	// go's slot form: direction is an enum picker, required, no default.
	tb.click(`#intents button[data-intent="go"]`)
	tb.wait(`document.querySelector('form.slots select[name="direction"]') !== null`)
	if got := tb.str(`Array.from(document.querySelectorAll('form.slots select[name="direction"] option')).map(o => o.value).join(",")`); got != ",north,south,east,west,up,down" {
		t.Errorf("direction picker offers %q", got)
	}
	tb.do(chromedp.SetValue(chromedp.CSS(`form.slots select[name="direction"]`), "west"))
	tb.shot("cloak-slot-form.png")
	tb.click(`form.slots button[type="submit"]`)
	tb.ready("cloakroom")
	tb.wait(`document.getElementById("view").innerText.indexOf("You are wearing a velvet cloak.") >= 0`)

	// Free text, routed by the story's examples.
	tb.typeIn(`#line`, "hang the cloak"+kb.Enter)
	tb.wait(`document.getElementById("view").innerText.indexOf("A velvet cloak hangs on the hook.") >= 0 && document.body.dataset.busy === ""`)
	if got := tb.saidLast(); got != "You hang the cloak on the hook." {
		t.Errorf("said %q", got)
	}
	if got := tb.str(`Array.from(document.querySelectorAll('#transcript .entry.input .note')).pop().textContent`); !strings.HasPrefix(got, "→ hang_cloak") {
		t.Errorf("routing note = %q", got)
	}
	tb.shot("cloak-hung.png")

	// Fork at turn 1: the cloakroom with the cloak still worn; reload it
	// and go on there.
	tb.do(chromedp.SetValue(chromedp.CSS(`#fork-at`), "1"))
	tb.click(`#fork`)
	tb.wait(`location.pathname !== "/s/` + id + `"`)
	tb.ready("cloakroom")
	tb.do(chromedp.Reload())
	tb.ready("cloakroom")
	if got := tb.str(`document.getElementById("view").innerText`); !strings.Contains(got, "You are wearing a velvet cloak.") {
		t.Errorf("the fork's view = %q", got)
	}
	tb.typeIn(`#line`, "go east"+kb.Enter)
	tb.ready("foyer")

	// The original session is where it was: on to the end, the cloak hung.
	tb.do(chromedp.Navigate(ts.URL + "/s/" + id))
	tb.ready("cloakroom")
	tb.wait(`document.getElementById("view").innerText.indexOf("A velvet cloak hangs on the hook.") >= 0`)
	tb.typeIn(`#line`, "go east"+kb.Enter)
	tb.ready("foyer")
	tb.click(`#intents button[data-intent="go"]`)
	tb.wait(`document.querySelector('form.slots select[name="direction"]') !== null`)
	tb.do(chromedp.SetValue(chromedp.CSS(`form.slots select[name="direction"]`), "south"))
	tb.click(`form.slots button[type="submit"]`)
	tb.ready("bar.lit")
	tb.click(`#intents button[data-intent="read_message"]`)
	tb.wait(`document.body.dataset.state === "ended" && document.body.dataset.busy === ""`)
	if got := tb.str(`document.getElementById("view").innerText`); !strings.Contains(got, "You have won.") {
		t.Errorf("the end's view = %q", got)
	}
	tb.shot("cloak-won.png")

	// proposal_smoke: its views are choice widgets. propose is an item
	// with a field of its own; the review offers accept, retry and cancel.
	sid := ts.create(t, "proposal_smoke")
	tb.do(chromedp.Navigate(ts.URL + "/s/" + sid))
	tb.ready("terminal")
	if got := tb.str(`document.querySelector("#view fieldset.el-choice legend").textContent`); got != "Actions" {
		t.Errorf("the choice's prompt = %q", got)
	}
	tb.typeIn(`#view form.param[data-intent="propose"] input[name="cmd"]`, "echo hello")
	tb.shot("proposal-terminal.png")
	tb.click(`#view form.param[data-intent="propose"] button`)
	tb.ready("reviewing")
	if got := tb.str(`Array.from(document.querySelectorAll("#view button.pick")).map(b => b.dataset.intent).join(",")`); got != "accept,retry,cancel" {
		t.Errorf("the review offers %q", got)
	}
	if got := tb.str(`Array.from(document.querySelectorAll('#transcript .entry.input')).pop().textContent`); !strings.Contains(got, "propose") || !strings.Contains(got, "echo hello") {
		t.Errorf("the transcript's last input = %q", got)
	}
	turn := tb.turnOf()
	tb.click(`#view button.pick[data-intent="retry"]`)
	tb.readyAfter("reviewing", turn)
	tb.click(`#view button.pick[data-intent="accept"]`)
	tb.ready("terminal")
	tb.wait(`document.getElementById("view").innerText.indexOf("Stage: done") >= 0`)
	tb.shot("proposal-done.png")
	tb.viewport(390, 844, chromedp.EmulateMobile)
	tb.noOverflow()
	tb.shot("proposal-390.png")
}

// hostileDOM is a script that finds what hostile content would have made
// of the page had it been parsed as markup: the names of any such
// elements, links to javascript:, and the title the content tries to set.
const hostileDOM = `(function(){
  var bad = [];
  document.querySelectorAll("#app script, #app img:not([src^='/api/sessions/']), #app b, #app i, #app iframe:not([src^='/'])").forEach(function (e) { bad.push(e.tagName); });
  document.querySelectorAll("a[href]").forEach(function (a) { if (/^\s*javascript:/i.test(a.getAttribute("href"))) bad.push("javascript link"); });
  if (document.title.indexOf("pwned") >= 0) bad.push("title " + document.title);
  return bad.join(",");
})()`

// TestBrowserHostile: a story whose texts, world and agent answer carry
// markup and script (testdata/kinds) is shown as text in the browser:
// nothing of it becomes an element or runs, on the home page, the
// session page (view, transcript, world pane) and after the agent's
// answer. The same story's multi and form choices are played too.
func TestBrowserHostile(t *testing.T) {
	tb := newTab(t)
	ts := startServer(t, serverOpts{stories: []string{kindsApp}, cassettes: map[string]string{kindsApp: kindsCassette}, debug: true})
	tb.do(chromedp.Navigate(ts.URL + "/?token=" + ts.Token))
	tb.wait(`document.body.dataset.ready === "home"`)
	if got := tb.str(hostileDOM); got != "" {
		t.Errorf("home page: %s", got)
	}
	if got := tb.str(`document.querySelector('article[data-story="kinds"]').innerText`); !strings.Contains(got, "Kinds <script>document.title='pwned'</script>") {
		t.Errorf("the story's title is not shown as text: %q", got)
	}
	tb.click(`button[data-start="kinds"]`)
	tb.ready("gallery")
	if got := tb.str(`document.querySelector("#view h3.el-heading").textContent`); got != "Gallery <script>document.title='pwned'</script>" {
		t.Errorf("heading = %q", got)
	}
	if got := tb.str(`document.querySelector("#view .el-banner strong").textContent`); got != "Banner <b>bold</b>" {
		t.Errorf("banner = %q", got)
	}
	tb.click(`#tab-world`)
	tb.wait(`document.getElementById("pane-world").innerText.indexOf("<img src=x onerror=") >= 0`)
	tb.click(`#intents button[data-intent="ask"]`)
	tb.wait(`document.querySelectorAll("#transcript .entry.say").length > 0 && document.body.dataset.busy === ""`)
	if got := tb.saidLast(); !strings.HasPrefix(got, `<script>document.title="pwned"</script><img src=x`) {
		t.Errorf("the agent's answer as text = %q", got)
	}
	tb.shot("hostile.png")
	if got := tb.str(hostileDOM); got != "" {
		t.Errorf("session page: %s", got)
	}

	// The multi choice: too many ticks are refused on the page, two go.
	tb.click(`#intents button[data-intent="multi"]`)
	tb.ready("multiroom")
	for _, v := range []string{"a", "b", "c"} {
		tb.click(`#view form.multi input[value="` + v + `"]`)
	}
	tb.click(`#view form.multi button.pick`)
	if got := tb.str(`document.querySelector("#view form.multi > span.hint").textContent`); got != "tick between 1 and 2" {
		t.Errorf("three ticks: %q", got)
	}
	tb.click(`#view form.multi input[value="b"]`)
	tb.click(`#view form.multi button.pick`)
	tb.ready("gallery")
	if got := tb.saidLast(); got != "tagged a,c" {
		t.Errorf("said %q", got)
	}
	// The form choice: its fields inside the template's sentence.
	tb.click(`#intents button[data-intent="form"]`)
	tb.ready("formroom")
	if got := tb.str(`document.querySelector('#view form.form input[name="nights"]').value`); got != "2" {
		t.Errorf("nights starts at %q, want the default 2", got)
	}
	tb.typeIn(`#view form.form input[name="city"]`, "Oslo")
	tb.do(chromedp.SetValue(chromedp.CSS(`#view form.form select[name="size"]`), "m"))
	tb.shot("form-choice.png")
	tb.click(`#view form.form button[type="submit"]`)
	tb.ready("gallery")
	if got := tb.saidLast(); got != "booked Oslo for 2 nights" {
		t.Errorf("said %q", got)
	}
	if got := tb.str(hostileDOM); got != "" {
		t.Errorf("after the choices: %s", got)
	}

	// --debug: the world pane edits a key; the next turn applies it.
	tb.click(`#tab-world`)
	edit := `#pane-world form[data-edit="booked"]`
	tb.do(chromedp.SetValue(chromedp.CSS(edit+` textarea`), `"by hand`))
	tb.click(edit + ` button`)
	if got := tb.str(`document.querySelector('` + edit + ` .hint').textContent`); !strings.HasPrefix(got, "not JSON: ") {
		t.Errorf("bad JSON: %q", got)
	}
	tb.do(chromedp.SetValue(chromedp.CSS(edit+` textarea`), `"by hand"`))
	tb.click(edit + ` button`)
	tb.wait(`document.getElementById("pending") && document.querySelector("#pending code").textContent === '{"booked":"by hand"}'`)
	tb.typeIn(`#line`, "hello"+kb.Enter)
	tb.wait(`document.querySelector('#pane-world tr[data-key="booked"] pre.value').textContent === '"by hand"' && document.body.dataset.busy === ""`)
	if browser.Eval[bool](t, tb.ctx, `document.getElementById("pending") !== null`) {
		t.Error("the edit is still pending after the turn")
	}
	tb.shot("world-edit.png")
}

// TestBrowserCancelMedia plays the kinds test story in headless Chromium:
// its media elements (an image and a video of the story's own, served by
// the server; the rest links or text, markup in a caption and a handle
// shown as text), then a slow call shown live, cancelled, and the session
// taking the next input as usual.
func TestBrowserCancelMedia(t *testing.T) {
	tb := newTab(t)
	ts := startServer(t, serverOpts{stories: []string{kindsApp}, cassettes: map[string]string{kindsApp: kindsCassette}})
	tb.do(chromedp.Navigate(ts.URL + "/?token=" + ts.Token))
	tb.wait(`document.body.dataset.ready === "home"`)
	tb.click(`button[data-start="kinds"]`)
	tb.wait(`location.pathname.startsWith("/s/")`)
	tb.ready("gallery")
	id := strings.TrimPrefix(tb.str(`location.pathname`), "/s/")

	// The image is loaded from the server; its caption, alt text and
	// handle, which hold markup, are text.
	img := `document.querySelector("#view figure.el-media img")`
	tb.wait(img + ` && ` + img + `.complete && ` + img + `.naturalWidth > 0`)
	if got := tb.str(img + `.getAttribute("src")`); got != "/api/sessions/"+id+"/media/8?turn=0" {
		t.Errorf("the image's src = %q", got)
	}
	if got := browser.Eval[int](t, tb.ctx, img+`.naturalWidth`); got != 24 {
		t.Errorf("the image is %d px wide, want the file's 24", got)
	}
	if got := tb.str(img + `.alt`); got != "a <b>dot</b>" {
		t.Errorf("the image's alt = %q", got)
	}
	fig := `(function(){ var f = document.querySelector("#view figure.el-media img").closest("figure"); return f.querySelector("figcaption").textContent + " | " + f.querySelector("code").textContent; })()`
	if got := tb.str(fig); got != `a <b>dot</b> | kinds#dot "><img src=x onerror="document.title='pwned'">` {
		t.Errorf("the image's caption and handle = %q", got)
	}
	video := `document.querySelector("#view figure.el-media video")`
	if got := tb.str(video + `.getAttribute("src") + " " + ` + video + `.controls`); got != "/api/sessions/"+id+"/media/9?turn=0 true" {
		t.Errorf("the video = %q", got)
	}
	// One image and one video: a path outside the story, a file of the
	// wrong kind, an http(s) handle and a javascript: one play nothing.
	if got := tb.str(`document.querySelectorAll("#view figure.el-media img").length + " " + document.querySelectorAll("#view figure.el-media video").length + " " + document.querySelectorAll("#view figure.el-media").length`); got != "1 1 6" {
		t.Errorf("images, videos, media elements = %q", got)
	}
	if got := tb.str(`Array.from(document.querySelectorAll("#view figure.el-media a")).map(a => a.getAttribute("href")).join(",")`); got != "https://example.com/clip.mp4" {
		t.Errorf("links = %q", got)
	}
	tb.shot("media.png")
	if got := tb.str(hostileDOM); got != "" {
		t.Errorf("media: %s", got)
	}

	// The slow call: shown live with its agent, the inputs disabled, then
	// cancelled; on_error takes the session back to the gallery.
	tb.click(`#intents button[data-intent="slow"]`)
	tb.wait(`document.querySelector('#calls li.call[data-handler="host.agent.decide"]') !== null`)
	if got := tb.str(`document.querySelector("#calls li.call").textContent`); !strings.Contains(got, "agent.test (host.agent.decide)") {
		t.Errorf("call shown = %q", got)
	}
	if !browser.Eval[bool](t, tb.ctx, `document.getElementById("controls").disabled`) {
		t.Error("the inputs stay enabled while a turn runs")
	}
	tb.shot("kinds-slow-call.png")
	tb.click(`#cancel`)
	tb.ready("gallery")
	if got := tb.str(`Array.from(document.querySelectorAll('#transcript .entry.error')).pop().textContent`); !strings.Contains(got, "call cancelled") {
		t.Errorf("the cancelled call's entry = %q", got)
	}
	if n := browser.Eval[int](t, tb.ctx, `document.querySelectorAll("#calls li.call").length`); n != 0 {
		t.Errorf("%d calls still shown after the cancel", n)
	}

	// The session goes on: free text (the state's default intent), then
	// an intent button; the media are shown again for the new turn.
	turn := tb.turnOf()
	tb.typeIn(`#line`, "after the cancel"+kb.Enter)
	tb.readyAfter("gallery", turn)
	if got := tb.saidLast(); got != "noted: after the cancel" {
		t.Errorf("said %q", got)
	}
	tb.click(`#intents button[data-intent="ask"]`)
	tb.wait(`document.querySelectorAll("#transcript .entry.say").length > 1 && document.body.dataset.busy === ""`)
	tb.ready("gallery")
	tb.wait(img + ` && ` + img + `.complete && ` + img + `.naturalWidth > 0 && ` + img + `.getAttribute("src").endsWith("?turn=" + document.body.dataset.turn)`)
	tb.shot("kinds-after-cancel.png")
	if got := tb.str(hostileDOM); got != "" {
		t.Errorf("after the cancel: %s", got)
	}
}
