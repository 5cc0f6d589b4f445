package starlark

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// Kitsoki's episodes: form serves like exchanges:.
func TestCassetteEpisodesForm(t *testing.T) {
	p := writeCassette(t, "kind: http_cassette\nrecord_mode: none\nepisodes:\n  - match: {method: GET, url: \"https://api.example/x\"}\n    response: {status: 200, body: ok}\n")
	c, err := LoadCassette(p, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Client(nil).Do(context.Background(), &HTTPRequest{Method: "GET", URL: "https://api.example/x"})
	if err != nil || resp.Body != "ok" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	// An empty episodes: list is an empty cassette: every request misses.
	p = writeCassette(t, "kind: http_cassette\nrecord_mode: none\nepisodes: []\n")
	c, err = LoadCassette(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(nil).Do(context.Background(), &HTTPRequest{Method: "GET", URL: "https://api.example/x"}); err == nil || !strings.Contains(err.Error(), "available: none left") {
		t.Errorf("miss: %v", err)
	}
}

// ignore_localhost and ignore_hosts pass requests to the live client:
// neither replayed nor recorded.
func TestCassetteIgnoredHosts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("live")) }))
	defer srv.Close()
	for _, keys := range []string{"ignore_localhost: true\n", "ignore_hosts: [127.0.0.1]\n"} {
		p := writeCassette(t, "kind: http_cassette\nrecord_mode: new_episodes\n"+keys+"exchanges:\n  - match: {url: \""+srv.URL+"/x\"}\n    response: {status: 200, body: canned}\n")
		c, err := LoadCassette(p, "")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Client(srv.Client()).Do(context.Background(), &HTTPRequest{Method: "GET", URL: srv.URL + "/x"})
		if err != nil || resp.Body != "live" {
			t.Fatalf("%s: resp %+v, err %v; want the live answer", keys, resp, err)
		}
		if err := c.Save(secret.New(nil)); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		if strings.Count(string(b), "response:") != 1 {
			t.Errorf("%s: an ignored request must not be recorded:\n%s", keys, b)
		}
	}
}

// filter_post_data_parameters redacts form and JSON body fields when the
// cassette is written.
func TestCassetteFilterPostData(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	p := filepath.Join(t.TempDir(), "c.http.yaml")
	if err := os.WriteFile(p, []byte("kind: http_cassette\nrecord_mode: all\nfilter_post_data_parameters: [password]\nexchanges: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCassette(p, "")
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Client(srv.Client())
	for _, body := range []string{`{"user":"ada","password":"hunter2"}`, "user=ada&password=hunter2"} {
		if _, err := cl.Do(context.Background(), &HTTPRequest{Method: "POST", URL: srv.URL, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Save(secret.New(nil)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "hunter2") || strings.Count(string(b), Redacted) < 2 {
		t.Errorf("the password must be redacted in the file:\n%s", b)
	}
}

// allow_playback_repeats serves a played exchange again; match_on: [body]
// tells requests apart by request.body; a replayed response carries its
// recorded headers.
func TestCassetteRepeatsBodyAndHeaders(t *testing.T) {
	const exchanges = `match_on: [method, url, body]
exchanges:
  - request: {method: POST, url: "https://api.example/q", body: '{"q":"a"}'}
    response: {status: 200, headers: {Content-Type: application/json}, body: A}
  - request: {method: POST, url: "https://api.example/q", body: '{"q":"b"}'}
    response: {status: 200, body: B}
`
	post := func(c *Cassette, body string) (string, string, error) {
		resp, err := c.Client(nil).Do(context.Background(), &HTTPRequest{Method: "POST", URL: "https://api.example/q", Body: body})
		if err != nil {
			return "", "", err
		}
		return resp.Body, resp.Headers["Content-Type"], nil
	}
	for _, repeats := range []bool{false, true} {
		head := "kind: http_cassette\nrecord_mode: none\n"
		if repeats {
			head += "allow_playback_repeats: true\n"
		}
		c, err := LoadCassette(writeCassette(t, head+exchanges), "")
		if err != nil {
			t.Fatal(err)
		}
		if body, ctype, err := post(c, `{"q":"b"}`); err != nil || body != "B" || ctype != "" {
			t.Fatalf("repeats %v: body b: %q %q %v", repeats, body, ctype, err)
		}
		if body, ctype, err := post(c, `{"q":"a"}`); err != nil || body != "A" || ctype != "application/json" {
			t.Fatalf("repeats %v: body a: %q %q %v", repeats, body, ctype, err)
		}
		body, _, err := post(c, `{"q":"a"}`)
		if repeats && (err != nil || body != "A") {
			t.Errorf("allow_playback_repeats: the second play got %q, %v", body, err)
		}
		if !repeats && err == nil {
			t.Errorf("without allow_playback_repeats a played exchange answered again: %q", body)
		}
	}
}
