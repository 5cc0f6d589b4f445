package web

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func helloServer(t *testing.T, o serverOpts) *testServer {
	t.Helper()
	o.stories = append(o.stories, helloApp)
	if o.cassettes == nil {
		o.cassettes = map[string]string{helloApp: helloCassette}
	}
	return startServer(t, o)
}

// TestGuard: every request needs the token (a cookie the printed URL
// sets, or the header), a request that changes something needs the
// header, and over loopback the Host and the Origin must be loopback
// names.
func TestGuard(t *testing.T) {
	ts := helloServer(t, serverOpts{})
	id := ts.create(t, "hello")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, hdr map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	tok := map[string]string{TokenHeader: ts.Token}
	cookieName := newGuard(ts.Token).cookie
	for _, tc := range []struct {
		name, path string
		hdr        map[string]string
		code       int
		body       string
	}{
		{"page without the token", "/", nil, 401, "this server needs its token: open the address kitsoki web printed"},
		{"api without the token", "/api/stories", nil, 401, "this server needs its token"},
		{"events without the token", "/api/sessions/" + id + "/events", nil, 401, "this server needs its token"},
		{"diagram without the token", "/api/sessions/" + id + "/diagram.svg", nil, 401, "this server needs its token"},
		{"trace without the token", "/s/" + id + "/trace/", nil, 401, "this server needs its token"},
		{"eval without the token", "/evals/hello/compose", nil, 401, "this server needs its token"},
		{"wrong token in the address", "/?token=" + strings.Repeat("ab", 32), nil, 401, "the token in this address is not this server's"},
		{"wrong cookie", "/", map[string]string{"Cookie": cookieName + "=" + strings.Repeat("cd", 32)}, 401, "this server needs its token"},
		{"another server's cookie", "/", map[string]string{"Cookie": "kitsoki_web_00000000=" + ts.Token}, 401, "this server needs its token"},
		{"foreign Host", "/api/stories", map[string]string{TokenHeader: ts.Token, "Host": "evil.example:80"}, 403, `forbidden: Host "evil.example:80" is not a loopback name`},
		{"foreign Origin", "/api/stories", map[string]string{TokenHeader: ts.Token, "Origin": "http://evil.example"}, 403, `forbidden: Origin "http://evil.example" is not a loopback origin`},
		{"the token header", "/api/stories", tok, 200, `"key":"hello"`},
		{"the cookie", "/api/stories", map[string]string{"Cookie": cookieName + "=" + ts.Token}, 200, `"key":"hello"`},
		{"the page with the cookie", "/s/" + id, map[string]string{"Cookie": cookieName + "=" + ts.Token}, 200, `<meta name="kitsoki-token" content="` + ts.Token + `">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(tc.path, tc.hdr)
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%s: %d %q, want %d with %q", tc.path, resp.StatusCode, body, tc.code, tc.body)
			}
		})
	}

	// The printed address sets the cookie and drops the token from the
	// address.
	resp, _ := get("/s/"+id+"?token="+ts.Token, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/s/"+id {
		t.Errorf("the printed address: %d to %q, want 303 to /s/%s", resp.StatusCode, resp.Header.Get("Location"), id)
	}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == cookieName {
			c = k
		}
	}
	if c == nil || c.Value != ts.Token || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie = %+v, want %s, HttpOnly, SameSite=Strict", c, cookieName)
	}
	page, body := get("/", map[string]string{"Cookie": cookieName + "=" + ts.Token})
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("page CSP = %q", csp)
	}
	if strings.Contains(body, "<script>") {
		t.Errorf("the page has an inline script: %s", body)
	}

	// A request that changes something needs the header: the cookie a
	// form from another page would carry is not enough.
	req, _ := http.NewRequest("POST", ts.URL+"/api/sessions", strings.NewReader(`{"story":"hello"}`))
	req.AddCookie(&http.Cookie{Name: cookieName, Value: ts.Token})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "carries the token in the X-Kitsoki-Token header") {
		t.Errorf("POST with the cookie only: %d %s", resp.StatusCode, b)
	}
	form := url.Values{"story": {"hello"}}
	req, _ = http.NewRequest("POST", ts.URL+"/api/sessions", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://attacker.example")
	req.AddCookie(&http.Cookie{Name: cookieName, Value: ts.Token})
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site form post: %d, want 403", resp.StatusCode)
	}
}

// TestPlay plays the demo story over the API and its event stream: an
// intent with slots, free text routed as the terminal routes it, a
// refused intent with its hint, a line that does not parse.
func TestPlay(t *testing.T) {
	ts := helloServer(t, serverOpts{})
	id := ts.create(t, "hello")
	s := ts.follow(t, id, "")
	s.until("turn 0", settled("lobby"))
	if got := s.Status["view"].([]any)[0].(map[string]any)["text"]; got != "Greeted so far: 0. Try: greet name=Ada style=formal" {
		t.Errorf("view = %v", got)
	}
	var names []string
	for _, in := range s.Status["intents"].([]any) {
		names = append(names, in.(map[string]any)["name"].(string))
	}
	if d := cmp.Diff([]string{"bye", "greet"}, names); d != "" {
		t.Errorf("intents (-want +got):\n%s", d)
	}

	if code, out := ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"intent": "bye"}); code != http.StatusAccepted {
		t.Fatalf("bye: %d %v", code, out)
	}
	s.until("the refusal", func(s *stream) bool { return len(s.texts(EntryRejected)) > 0 && settled("lobby")(s) })
	rej := s.Entries[len(s.Entries)-1]
	if rej.Kind != EntryRejected || !strings.HasPrefix(rej.Text, "GUARD_FAILED: ") || rej.Note != "Greet somebody before you leave." {
		t.Errorf("refusal entry = %+v", rej)
	}

	ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"intent": "greet", "slots": map[string]any{"name": "Ada", "style": "formal"}})
	s.until("greeted", settled("greeted"))
	if d := cmp.Diff([]string{"Good day, Ada. It is a pleasure to make your acquaintance."}, s.texts(EntrySay)); d != "" {
		t.Errorf("says (-want +got):\n%s", d)
	}
	ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "again"})
	s.until("lobby", settled("lobby"))
	// Free text, routed: "greet Grace" is the greet intent with its one
	// required slot (the verb_value tier).
	ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "greet Grace"})
	s.until("Grace greeted", settled("greeted"))
	in := s.texts(EntryInput)
	if d := cmp.Diff([]string{"bye", "greet name=Ada style=formal", "again", "greet Grace"}, in); d != "" {
		t.Errorf("inputs (-want +got):\n%s", d)
	}
	var note string
	for _, e := range s.Entries {
		if e.Kind == EntryInput && e.Text == "greet Grace" {
			note = e.Note
		}
	}
	if note != "→ greet (verb_value, 1.00)" {
		t.Errorf("routing note = %q", note)
	}
	if got := s.texts(EntrySay); len(got) != 2 || got[1] != "Hey Grace, good to see you!" {
		t.Errorf("says = %q", got)
	}
	for _, tc := range []struct {
		body map[string]any
		code int
		msg  string
	}{
		{map[string]any{"text": "name=Ada"}, http.StatusAccepted, ""},
		{map[string]any{"text": ":world"}, http.StatusBadRequest, ":world: the page has no : commands"},
		{map[string]any{"text": "  "}, http.StatusBadRequest, "type an intent (greet name=Ada) or a sentence"},
		{map[string]any{"slots": map[string]any{}}, http.StatusBadRequest, `want {"text": "..."} or {"intent": "...", "slots": {...}}`},
	} {
		code, out := ts.do(t, "POST", "/api/sessions/"+id+"/input", tc.body)
		if code != tc.code || (tc.msg != "" && !strings.Contains(out["error"].(string), tc.msg)) {
			t.Errorf("input %v: %d %v, want %d %q", tc.body, code, out, tc.code, tc.msg)
		}
	}
	s.until("the unparsed line's notice", func(s *stream) bool { return len(s.texts(EntryNotice)) > 0 && settled("greeted")(s) })
	if got := s.texts(EntryNotice); got[0] != `not taken: "name=Ada": the line must start with an intent name` {
		t.Errorf("notice = %q", got)
	}
	// Free text no tier routes goes to the router agent, which the
	// cassette does not answer: refused as ROUTER_FAILED, as kitsoki run
	// --cassette refuses it.
	ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "greet name='Ada"})
	s.until("the router's refusal", func(s *stream) bool { return len(s.texts(EntryRejected)) == 2 && settled("greeted")(s) })
	if got := s.texts(EntryRejected)[1]; !strings.HasPrefix(got, `ROUTER_FAILED: the router agent agent.claude could not route "greet name='Ada"`) {
		t.Errorf("router refusal = %q", got)
	}
	if code, out := ts.do(t, "POST", "/api/sessions/nope/input", map[string]any{"text": "x"}); code != http.StatusNotFound {
		t.Errorf("an unknown session: %d %v", code, out)
	}
	if code, out := ts.do(t, "POST", "/api/sessions", map[string]any{"story": "nope"}); code != http.StatusNotFound || out["error"] != `no story "nope" is served here` {
		t.Errorf("an unknown story: %d %v", code, out)
	}
}

// TestCancel: a call in flight is shown with its agent, a second input is
// refused while it runs, and cancel ends it (the invoke's on_error takes
// the session back to the lobby).
func TestCancel(t *testing.T) {
	ts := helloServer(t, serverOpts{cassettes: map[string]string{helloApp: slowCassette(t)}})
	id := ts.create(t, "hello")
	s := ts.follow(t, id, "")
	s.until("turn 0", settled("lobby"))
	for _, line := range []string{"greet name=Ada style=formal", "again", "greet name=Grace", "again"} {
		ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": line})
		want := "greeted"
		if line == "again" {
			want = "lobby"
		}
		s.until(line, settled(want))
	}
	ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "greet name=Linus"})
	s.until("the slow call", func(s *stream) bool { return s.Calls != nil && len(s.Calls["calls"].([]any)) > 0 })
	call := s.Calls["calls"].([]any)[0].(map[string]any)
	if call["handler"] != "host.agent.decide" || call["agent"] != "agent.demo" || s.Calls["busy"] != "turn" {
		t.Errorf("call in flight = %v (calls %v)", call, s.Calls)
	}
	if code, out := ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "bye"}); code != http.StatusConflict ||
		out["error"] != "a turn is in progress: wait for it, or cancel it" {
		t.Errorf("input during a turn: %d %v", code, out)
	}
	if code, out := ts.do(t, "POST", "/api/sessions/"+id+"/cancel", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %v", code, out)
	}
	s.until("back in the lobby", settled("lobby"))
	errs := s.texts(EntryError)
	if len(errs) != 1 || !strings.Contains(errs[0], "greeter decide failed: agent: deadline_exceeded: call cancelled") {
		t.Errorf("error entries = %q, want the interrupted call", errs)
	}
	if code, out := ts.do(t, "POST", "/api/sessions/"+id+"/cancel", nil); code != http.StatusConflict || out["error"] != "nothing is running" {
		t.Errorf("cancel with nothing running: %d %v", code, out)
	}
}

// TestRestart: a session goes on after the server stops and another
// starts on the same sessions directory; its transcript is read back
// from the journal, and a page reconnecting with its last event id is
// sent everything again (a new copy of the transcript).
func TestRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	a := helloServer(t, serverOpts{dir: dir})
	id := a.create(t, "hello")
	s := a.follow(t, id, "")
	s.until("turn 0", settled("lobby"))
	a.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "greet name=Ada style=formal"})
	s.until("greeted", settled("greeted"))
	before := s.Entries
	last := s.LastID
	a.stop(t)

	b := helloServer(t, serverOpts{dir: dir, token: a.Token})
	r := b.follow(t, id, last)
	r.until("resumed", settled("greeted"))
	if d := cmp.Diff(before, r.Entries); d != "" {
		t.Errorf("transcript read back (-before +after):\n%s", d)
	}
	b.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"intent": "bye"})
	r.until("farewell", settled("farewell"))
	// The journal's resumed marker is written with the next turn.
	if got := r.Entries[len(before)]; got.Kind != EntryNotice || got.Text != "resumed after turn 1" {
		t.Errorf("entry after the restart = %+v, want the resumed notice", got)
	}
	if r.Status["done"] != true {
		t.Errorf("done = %v", r.Status["done"])
	}
	b.stop(t)

	// A finished session is only looked at.
	c := helloServer(t, serverOpts{dir: dir, token: a.Token})
	f := c.follow(t, id, "")
	f.until("inspected", func(s *stream) bool { return s.Status != nil && s.Status["read_only"] != nil })
	if got := f.Status["read_only"]; got != "this session finished (state farewell, turn 2): fork it to go on" {
		t.Errorf("read_only = %v", got)
	}
	if code, out := c.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "again"}); code != http.StatusConflict ||
		!strings.Contains(out["error"].(string), "fork it to go on") {
		t.Errorf("input to a finished session: %d %v", code, out)
	}
	if got := f.texts(EntrySay); len(got) != 1 {
		t.Errorf("says of the finished session = %q", got)
	}
}

// TestFork: a fork starts a new session at the turn asked, with the
// transcript up to it; the old one is left as it was.
func TestFork(t *testing.T) {
	ts := helloServer(t, serverOpts{})
	id := ts.create(t, "hello")
	s := ts.follow(t, id, "")
	s.until("turn 0", settled("lobby"))
	for _, line := range []string{"greet name=Ada style=formal", "again"} {
		ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": line})
		s.until(line, func(s *stream) bool {
			return settled(s.Status["state"].(string))(s) && len(s.texts(EntryInput)) == 2-boolInt(line != "again")
		})
	}
	s.until("lobby", settled("lobby"))
	code, out := ts.do(t, "POST", "/api/sessions/"+id+"/fork", map[string]any{"at": 1})
	if code != http.StatusCreated {
		t.Fatalf("fork: %d %v", code, out)
	}
	fid := out["id"].(string)
	f := ts.follow(t, fid, "")
	f.until("the fork", settled("greeted"))
	if f.Status["forked_from"] != id || f.Status["forked_at"] != float64(1) {
		t.Errorf("forked_from/at = %v %v", f.Status["forked_from"], f.Status["forked_at"])
	}
	if d := cmp.Diff([]string{"greet name=Ada style=formal"}, f.texts(EntryInput)); d != "" {
		t.Errorf("the fork's inputs (-want +got):\n%s", d)
	}
	ts.do(t, "POST", "/api/sessions/"+fid+"/input", map[string]any{"intent": "bye"})
	f.until("the fork ends", settled("farewell"))
	code, out = ts.do(t, "GET", "/api/stories", nil)
	var rows []string
	for _, st := range out["stories"].([]any) {
		for _, m := range st.(map[string]any)["sessions"].([]any) {
			m := m.(map[string]any)
			rows = append(rows, m["id"].(string)+" "+m["state"].(string))
		}
	}
	slices.Sort(rows)
	want := []string{id + " lobby", fid + " farewell"}
	slices.Sort(want)
	if code != http.StatusOK || !cmp.Equal(want, rows) {
		t.Errorf("sessions listed = %v, want %v", rows, want)
	}
	if code, out := ts.do(t, "POST", "/api/sessions/"+id+"/fork", map[string]any{"at": 9}); code != http.StatusConflict ||
		!strings.Contains(out["error"].(string), "fork: turn 9 did not finish") {
		t.Errorf("fork past the end: %d %v", code, out)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHostile: what a story and an agent write reaches the page as JSON
// text only: no raw <, > or & (encoding/json escapes them), bidi controls
// as marks, and the diagram as an image with a policy of its own.
func TestHostile(t *testing.T) {
	ts := startServer(t, serverOpts{stories: []string{kindsApp}, cassettes: map[string]string{kindsApp: kindsCassette}})
	id := ts.create(t, "kinds")
	s := ts.follow(t, id, "")
	s.until("turn 0", settled("gallery"))
	ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"intent": "ask"})
	s.until("the answer", func(s *stream) bool { return len(s.texts(EntrySay)) == 1 && settled("gallery")(s) })
	raw := s.Raw.String()
	for _, bad := range []string{"<script", "<img", "<a ", "\u202e"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the event stream holds %q raw", bad)
		}
	}
	if !strings.Contains(raw, `\u003cscript\u003e`) || !strings.Contains(raw, "[U+202E RLO]") {
		t.Errorf("the event stream lacks the escaped markup or the bidi mark:\n%s", raw)
	}
	say := s.texts(EntrySay)[0]
	if !strings.HasPrefix(say, `<script>document.title="pwned"</script><img src=x`) || !strings.HasSuffix(say, "[U+202E RLO]evil") {
		t.Errorf("the agent's answer as text = %q", say)
	}
	code, out := ts.do(t, "GET", "/api/stories", nil)
	if code != 200 || !strings.HasPrefix(out["stories"].([]any)[0].(map[string]any)["title"].(string), "Kinds <script>") {
		t.Errorf("stories: %d %v", code, out)
	}
}

// TestWorldEdit: in debug mode a world key is queued for the next turn
// (checked against its declaration), shown as pending, and applied by
// the turn; without debug the page cannot edit.
func TestWorldEdit(t *testing.T) {
	ts := startServer(t, serverOpts{stories: []string{kindsApp}, cassettes: map[string]string{kindsApp: kindsCassette}, debug: true})
	id := ts.create(t, "kinds")
	s := ts.follow(t, id, "")
	s.until("turn 0", settled("gallery"))
	for _, tc := range []struct {
		key  string
		val  any
		code int
		msg  string
	}{
		{"nope", 1, http.StatusBadRequest, `world key "nope" is not declared under world:`},
		{"count", "many", http.StatusBadRequest, "world override: "},
		{"booked", "by hand", http.StatusAccepted, ""},
	} {
		code, out := ts.do(t, "POST", "/api/sessions/"+id+"/world", map[string]any{"key": tc.key, "value": tc.val})
		if code != tc.code || (tc.msg != "" && !strings.Contains(out["error"].(string), tc.msg)) {
			t.Errorf("world %s=%v: %d %v, want %d %q", tc.key, tc.val, code, out, tc.code, tc.msg)
		}
	}
	s.until("pending", func(s *stream) bool { return s.Status["pending_world"] != nil })
	if d := cmp.Diff(map[string]any{"booked": "by hand"}, s.Status["pending_world"]); d != "" {
		t.Errorf("pending (-want +got):\n%s", d)
	}
	ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "hello"})
	s.until("the turn", func(s *stream) bool { return len(s.texts(EntrySay)) == 1 && settled("gallery")(s) })
	if s.Status["pending_world"] != nil || s.Status["world"].(map[string]any)["booked"] != "by hand" {
		t.Errorf("after the turn: pending %v, booked %v", s.Status["pending_world"], s.Status["world"].(map[string]any)["booked"])
	}

	plain := startServer(t, serverOpts{stories: []string{kindsApp}, cassettes: map[string]string{kindsApp: kindsCassette}})
	pid := plain.create(t, "kinds")
	if code, out := plain.do(t, "POST", "/api/sessions/"+pid+"/world", map[string]any{"key": "count", "value": 2}); code != http.StatusForbidden ||
		out["error"] != "the world is edited in debug mode: start kitsoki web with --debug" {
		t.Errorf("edit without debug: %d %v", code, out)
	}
}

// TestDiscover: the stories of the arguments, of .kitsoki.yaml's
// story_dirs, or of the current directory.
func TestDiscover(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("app: {id: x}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := mk("lib/a/app.yaml"), mk("lib/b/app.yaml"), mk("one/app.yaml")
	if err := os.WriteFile(filepath.Join(root, ".kitsoki.yaml"), []byte("story_dirs: [lib]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
		err  string
	}{
		{"a directory of stories", []string{filepath.Join(root, "lib")}, []string{a, b}, ""},
		{"a story directory and a root file", []string{filepath.Join(root, "one"), a}, []string{a, c}, ""},
		{"the project's story_dirs", nil, []string{a, b}, ""},
		{"no story", []string{t.TempDir()}, nil, "no story here: want "},
		{"missing", []string{filepath.Join(root, "gone")}, nil, "no such file or directory (give a story directory, its app.yaml, or a directory of stories)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Discover(tc.args, root)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestDelete: a session is deleted through the session API once the
// server let go of it: not while a turn runs, then gone from the list
// and its journal with it.
func TestDelete(t *testing.T) {
	ts := helloServer(t, serverOpts{cassettes: map[string]string{helloApp: slowCassette(t)}})
	id := ts.create(t, "hello")
	s := ts.follow(t, id, "")
	s.until("turn 0", settled("lobby"))
	for _, line := range []string{"greet name=Ada style=formal", "again", "greet name=Grace", "again", "greet name=Linus"} {
		ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": line})
		if line != "greet name=Linus" {
			s.until(line, func(s *stream) bool {
				return s.Calls["busy"] == nil && len(s.texts(EntryInput)) > 0 && s.texts(EntryInput)[len(s.texts(EntryInput))-1] == line
			})
		}
	}
	s.until("the slow call", func(s *stream) bool { return s.Calls != nil && len(s.Calls["calls"].([]any)) > 0 })
	if code, out := ts.do(t, "DELETE", "/api/sessions/"+id, nil); code != http.StatusConflict ||
		out["error"] != "a turn is in progress: delete the session once it ends (or cancel it)" {
		t.Errorf("delete during a turn: %d %v", code, out)
	}
	ts.do(t, "POST", "/api/sessions/"+id+"/cancel", nil)
	s.until("cancelled", settled("lobby"))
	code, out := ts.do(t, "DELETE", "/api/sessions/"+id, nil)
	if code != http.StatusOK || out["id"] != id {
		t.Fatalf("delete: %d %v", code, out)
	}
	if _, err := os.Stat(filepath.Join(ts.Dir, id+".jsonl")); !os.IsNotExist(err) {
		t.Errorf("the journal is still there: %v", err)
	}
	_, list := ts.do(t, "GET", "/api/stories", nil)
	if rows := list["stories"].([]any)[0].(map[string]any)["sessions"].([]any); len(rows) != 0 {
		t.Errorf("sessions listed after the delete = %v", rows)
	}
	if code, out := ts.do(t, "DELETE", "/api/sessions/"+id, nil); code != http.StatusNotFound {
		t.Errorf("delete again: %d %v", code, out)
	}
	if code, _ := ts.do(t, "POST", "/api/sessions/"+id+"/input", map[string]any{"text": "bye"}); code != http.StatusNotFound {
		t.Errorf("input to the deleted session: %d", code)
	}
}

// TestMedia: a view's image and video files inside the story's directory
// are served to the page by their element's index, with their type and a
// policy of their own; a path outside, a file of another kind and an
// element that is not media are not.
func TestMedia(t *testing.T) {
	ts := startServer(t, serverOpts{stories: []string{kindsApp}, cassettes: map[string]string{kindsApp: kindsCassette}})
	id := ts.create(t, "kinds")
	s := ts.follow(t, id, "")
	s.until("turn 0", settled("gallery"))
	srcs := map[string]string{}
	index := map[string]int{}
	for i, e := range s.Status["view"].([]any) {
		m, _ := e.(map[string]any)["media"].(map[string]any)
		if m == nil {
			continue
		}
		src, _ := m["src"].(string)
		srcs[m["caption"].(string)] = src
		index[m["caption"].(string)] = i
	}
	base := "/api/sessions/" + id + "/media/"
	want := map[string]string{
		"a clip": "", "a bad link": "", "outside": "", "not a video": "",
		"a <b>dot</b>":   base + fmt.Sprint(index["a <b>dot</b>"]) + "?turn=0",
		"a clip of ours": base + fmt.Sprint(index["a clip of ours"]) + "?turn=0",
	}
	if d := cmp.Diff(want, srcs); d != "" {
		t.Errorf("media sources (-want +got):\n%s", d)
	}
	get := func(path string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set(TokenHeader, ts.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	png, _ := os.ReadFile(filepath.Join(filepath.Dir(kindsApp), "media", "dot.png"))
	for _, tc := range []struct {
		name, path string
		code       int
		ctype      string
		body       string
	}{
		{"the image", want["a <b>dot</b>"], 200, "image/png", string(png)},
		{"the video", want["a clip of ours"], 200, "video/webm", ""},
		{"a path outside", base + fmt.Sprint(index["outside"]), 403, "", "is outside the story's directory and the workspace"},
		{"a png as a video", base + fmt.Sprint(index["not a video"]), 415, "", "media/dot.png is not a video file the page plays (by its name: .m4v, .mov, .mp4, .ogv, .webm)"},
		{"a link", base + fmt.Sprint(index["a bad link"]), 404, "", "the view has no media element"},
		{"not media", base + "0", 404, "", "the view has no media element 0 the page plays"},
		{"past the view", base + "99", 404, "", "the view has no media element 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(tc.path)
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%s: %d %q, want %d with %q", tc.path, resp.StatusCode, body, tc.code, tc.body)
			}
			if tc.ctype != "" {
				if got := resp.Header.Get("Content-Type"); got != tc.ctype {
					t.Errorf("Content-Type = %q, want %q", got, tc.ctype)
				}
				if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("policy = %q, nosniff %q", csp, resp.Header.Get("X-Content-Type-Options"))
				}
			}
		})
	}
}

// TestMediaFile: a media path is read inside the story's directory or
// the workspace only, a relative one against the workspace; a link out of
// them is refused.
func TestMediaFile(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	dir := filepath.Join(ws, "stories", "a")
	outside := filepath.Join(root, "secret.png")
	for _, p := range []string{filepath.Join(dir, "app.yaml"), filepath.Join(dir, "in.png"), filepath.Join(ws, ".artifacts", "a.png"), outside} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.png")); err != nil {
		t.Fatal(err)
	}
	si := &storyInfo{File: filepath.Join(dir, "app.yaml")}
	for _, tc := range []struct {
		name, workspace, path, want, err string
	}{
		{"in the story's directory", "", filepath.Join(dir, "in.png"), filepath.Join(dir, "in.png"), ""},
		{"relative to the story without a workspace", "", "in.png", filepath.Join(dir, "in.png"), ""},
		{"relative to the workspace", ws, ".artifacts/a.png", filepath.Join(ws, ".artifacts", "a.png"), ""},
		{"outside", ws, outside, "", "is outside the story's directory and the workspace"},
		{"dot-dot out", "", "../../../secret.png", "", "is outside the story's directory and the workspace"},
		{"a link out", "", "link.png", "", "path escapes from parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{cfg: Config{Workspace: tc.workspace}}
			f, err := s.mediaFile(si, tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			if string(b) != tc.want {
				t.Errorf("read %q, want the file %s", b, tc.want)
			}
		})
	}
}
