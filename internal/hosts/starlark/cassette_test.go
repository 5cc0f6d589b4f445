package starlark

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

func writeCassette(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.http.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// get runs one GET through c's client and returns the status or the error.
func get(t *testing.T, cl HTTPClient, url string, headers map[string]string) (int, string) {
	t.Helper()
	resp, err := cl.Do(context.Background(), &HTTPRequest{Method: "GET", URL: url, Headers: headers})
	if err != nil {
		return 0, err.Error()
	}
	return resp.Status, ""
}

func TestCassetteMatching(t *testing.T) {
	p := writeCassette(t, `kind: http_cassette
match_on: [method, path, query, headers]
exchanges:
  - request: {method: GET, url: "https://a.test/w?b=2&a=1", headers: {Accept: application/json}}
    response: {status: 200, body: "w"}
  - match: {method: get, url_pattern: "/items/[0-9]+$"}
    response: {status: 201, body: "i"}
    replay: any
  - match: {url: "https://a.test/once"}
    response: {status: 202, body: "o"}
`)
	c, err := LoadCassette(p, "")
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Client(nil)
	type step struct {
		url     string
		headers map[string]string
		status  int
		err     string
	}
	for i, s := range []step{
		{url: "https://other.test/w?a=1&b=2", headers: map[string]string{"Accept": "application/json", "X": "y"}, status: 200}, // host not in match_on, query order-free, headers a subset
		{url: "https://a.test/w?a=1&b=2", headers: map[string]string{"Accept": "application/json"},
			err: "GET https://a.test/w?a=1&b=2: no exchange in the HTTP cassette c.http.yaml matches (record mode none; available: GET ~/items/[0-9]+$, https://a.test/once)"}, // consumed
		{url: "https://a.test/items/7", status: 201},
		{url: "https://a.test/items/8", status: 201}, // replay: any
		{url: "https://a.test/once", status: 202},
		{url: "https://a.test/once", err: "GET https://a.test/once: no exchange in the HTTP cassette c.http.yaml matches (record mode none; available: GET ~/items/[0-9]+$)"},
	} {
		status, e := get(t, cl, s.url, s.headers)
		if status != s.status || e != s.err {
			t.Errorf("step %d %s: (%d, %q), want (%d, %q)", i, s.url, status, e, s.status, s.err)
		}
	}
}

func TestCassetteParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"kind: host_cassette\nexchanges: []\n", `kind: is "host_cassette"; an HTTP cassette says kind: http_cassette`},
		{"kind: http_cassette\nrecord_mode: sometimes\n", `record_mode "sometimes" is not one of none, once, new_episodes, all`},
		{"kind: http_cassette\nignore_host: [x]\n", `line 2: ignore_host: unknown key (did you mean "ignore_hosts"?) (known: kind, record_mode, match_on, filter_headers, filter_query_parameters, filter_post_data_parameters, ignore_hosts, ignore_localhost, allow_playback_repeats, exchanges, episodes)`},
		{"kind: http_cassette\nexchanges: []\nepisodes: []\n", "line 3: episodes: and exchanges: are the same list; write one"},
		{"kind: http_cassette\nepisodes:\n  - response: {status: 200}\n", "episodes[0]: give exactly one of request: (a recorded request) or match: (a selector)"},
		{"kind: http_cassette\nmatch_on: [colour]\n", `match_on: "colour" is not one of method, url, uri, scheme, host, port, path, query, body, headers`},
		{"kind: http_cassette\nexchanges:\n  - response: {status: 200}\n", "exchanges[0]: give exactly one of request: (a recorded request) or match: (a selector)"},
		{"kind: http_cassette\nexchanges:\n  - match: {url: x}\n    response: {status: 200, bodyy: x}\n", "line 4: exchanges[0].response.bodyy: unknown key (did you mean \"body\"?) (known: status, headers, body)"},
		{"kind: http_cassette\nexchanges:\n  - match: {url_pattern: '('}\n    response: {status: 200}\n", "exchanges[0].match.url_pattern: error parsing regexp: missing closing ): `(`"},
		{"kind: http_cassette\nexchanges:\n  - match: {url: x}\n    response: {status: 42}\n", "exchanges[0].response.status: 42 is not an HTTP status"},
		{"kind: http_cassette\nexchanges:\n  - match: {url: x}\n    response: {status: 200}\n    replay: twice\n", `exchanges[0].replay: "twice"; the only value is any (serve on every match)`},
	}
	for _, tt := range tests {
		p := writeCassette(t, tt.src)
		_, err := LoadCassette(p, "")
		if want := "http cassette " + p + ": " + tt.want; err == nil || err.Error() != want {
			t.Errorf("LoadCassette(%q):\n got %v\nwant %s", tt.src, err, want)
		}
	}
	if _, err := LoadCassette(filepath.Join(t.TempDir(), "none.yaml"), ""); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing replay-only cassette: %v", err)
	}
	if _, err := LoadCassette("x.yaml", "always"); err == nil || err.Error() != `http cassette x.yaml: record mode "always" is not one of none, once, new_episodes, all` {
		t.Errorf("bad mode: %v", err)
	}
}

// The record modes, against a loopback server that counts its hits.
func TestCassetteRecordModes(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Set-Cookie", "sid=abc")
		_, _ = w.Write([]byte("live " + r.URL.Path + " key=TOPSECRETVALUE"))
	}))
	defer srv.Close()
	recorded := "kind: http_cassette\nrecord_mode: %s\nexchanges:\n  - request: {method: GET, url: \"" + srv.URL + "/old\"}\n    response: {status: 200, body: old}\n"
	tests := []struct {
		mode     string
		empty    bool
		urls     []string
		wantHits int64
		wantErr  string // of the last request
		wantN    int    // exchanges written
	}{
		{mode: ModeOnce, empty: true, urls: []string{"/a", "/b"}, wantHits: 2, wantN: 2},
		{mode: ModeOnce, urls: []string{"/old", "/a"}, wantHits: 0, wantErr: "no exchange in the HTTP cassette c.http.yaml matches (record mode once"},
		{mode: ModeNewEpisodes, urls: []string{"/old", "/a"}, wantHits: 1, wantN: 2},
		{mode: ModeAll, urls: []string{"/old"}, wantHits: 1, wantN: 1},
		{mode: ModeNone, urls: []string{"/a"}, wantErr: "record mode none"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			hits.Store(0)
			p := filepath.Join(t.TempDir(), "c.http.yaml")
			if !tt.empty {
				p = writeCassette(t, strings.Replace(recorded, "%s", tt.mode, 1))
			}
			c, err := LoadCassette(p, tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			cl := c.Client(srv.Client())
			var last string
			for _, u := range tt.urls {
				_, last = get(t, cl, srv.URL+u, map[string]string{"Authorization": "Bearer TOPSECRETVALUE"})
			}
			if !strings.Contains(last, tt.wantErr) || (tt.wantErr == "") != (last == "") {
				t.Errorf("last error %q, want %q", last, tt.wantErr)
			}
			if hits.Load() != tt.wantHits {
				t.Errorf("live hits %d, want %d", hits.Load(), tt.wantHits)
			}
			if err := c.Save(secret.New([]string{"TOPSECRETVALUE"})); err != nil {
				t.Fatal(err)
			}
			if tt.wantN == 0 {
				return
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "- request:"); n != tt.wantN {
				t.Errorf("%d exchanges written, want %d:\n%s", n, tt.wantN, b)
			}
			for _, leak := range []string{"TOPSECRETVALUE", "sid=abc", "Bearer"} {
				if strings.Contains(string(b), leak) {
					t.Errorf("the cassette keeps %q:\n%s", leak, b)
				}
			}
			// What was written replays without the server.
			again, err := LoadCassette(p, ModeNone)
			if err != nil {
				t.Fatal(err)
			}
			if status, e := get(t, again.Client(nil), srv.URL+tt.urls[len(tt.urls)-1], nil); status != 200 || e != "" {
				t.Errorf("replay of the recording: %d %q", status, e)
			}
		})
	}
}

func TestCassetteFilters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Api-Key", "k-123")
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	p := writeCassette(t, "kind: http_cassette\nrecord_mode: new_episodes\nfilter_headers: [X-Api-Key]\nfilter_query_parameters: [token]\nexchanges: []\n")
	c, err := LoadCassette(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, e := get(t, c.Client(srv.Client()), srv.URL+"/q?token=t0k&x=1", map[string]string{"X-Api-Key": "k-123"}); status != 200 || e != "" {
		t.Fatalf("%d %q", status, e)
	}
	if err := c.Save(nil); err != nil {
		t.Fatal(err)
	}
	again, err := LoadCassette(p, ModeNone)
	if err != nil {
		t.Fatal(err)
	}
	ex := again.exchanges[0]
	want := &HTTPRequest{Method: "GET", URL: srv.URL + "/q?token=REDACTED&x=1", Headers: map[string]string{"X-Api-Key": "REDACTED"}}
	if d := cmp.Diff(want, ex.Request); d != "" {
		t.Errorf("written request (-want +got):\n%s", d)
	}
	if ex.Response.Headers["X-Api-Key"] != Redacted {
		t.Errorf("response header written as %q", ex.Response.Headers["X-Api-Key"])
	}
	// The filtered recording still matches the live request's URL.
	if status, e := get(t, again.Client(nil), srv.URL+"/q?token=other&x=1", nil); status != 200 || e != "" {
		t.Errorf("filtered query replay: %d %q", status, e)
	}
}
