package traceview

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// A trace cannot put markup or script in the page: its data is JSON with
// <, > and & escaped, inside a script element of type application/json.
func TestHTMLEscapesTrace(t *testing.T) {
	r := Build([]trace.Event{{Turn: 1, Kind: trace.KindTurnInput, Payload: map[string]any{"input": "</script><img src=x onerror=alert(1)>", "intent": ""}}})
	var buf bytes.Buffer
	if err := HTML(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "<img src=x") || strings.Count(page, "</script>") != 2 {
		t.Errorf("trace text escaped the data block:\n%s", page[strings.Index(page, `id="run-data"`):][:200])
	}
	for _, bad := range []string{"http://", "https://", "<script src", "<link "} {
		if strings.Contains(page, bad) {
			t.Errorf("the page refers outside itself: %q", bad)
		}
	}
	if !strings.Contains(page, "var LIVE = /*LIVE*/false;") {
		t.Error("a written page is not live")
	}
}

func TestServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	b, err := os.ReadFile("testdata/failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o644)
	writing := true
	srv := httptest.NewServer((&Server{Path: path, Writing: func(string) bool { return writing }}).Handler())
	defer srv.Close()
	get := func(p string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get("/")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(body, "var LIVE = true;") {
		t.Errorf("GET /: %d %s, live=%v", resp.StatusCode, resp.Header.Get("Content-Type"), strings.Contains(body, "var LIVE = true;"))
	}
	for _, w := range []bool{true, false} {
		writing = w
		resp, body = get("/run.json")
		var r Run
		if err := json.Unmarshal([]byte(body), &r); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /run.json: %d %v", resp.StatusCode, err)
		}
		if r.Complete == w || r.Events != 30 || len(r.Turns) != 4 {
			t.Errorf("writing=%v: complete=%v events=%d turns=%d", w, r.Complete, r.Events, len(r.Turns))
		}
	}
	os.WriteFile(path, []byte("not a trace\n"), 0o644)
	if resp, body = get("/run.json"); resp.StatusCode != 500 || !strings.Contains(body, "trace missing session.header on line 1") {
		t.Errorf("a broken trace: %d %q", resp.StatusCode, body)
	}
	if resp, _ = get("/other"); resp.StatusCode != 404 {
		t.Errorf("GET /other: %d", resp.StatusCode)
	}
}

// A page on another site that rebinds its domain to 127.0.0.1 cannot
// read the run: a request over loopback naming another host, or coming
// from another origin, is refused.
func TestServerRefusesDNSRebinding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	b, err := os.ReadFile("testdata/failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o600)
	srv := httptest.NewServer((&Server{Path: path, Writing: func(string) bool { return false }}).Handler())
	defer srv.Close()
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"attacker.example", "", http.StatusForbidden},
		{"attacker.example:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:], "http://attacker.example", http.StatusForbidden},
		{"", "https://attacker.example", http.StatusForbidden},
		{"", "", http.StatusOK},
		{"localhost", "", http.StatusOK},
	} {
		for _, p := range []string{"/", "/run.json"} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+p, nil)
			if c.host != "" {
				req.Host = c.host
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("GET %s Host %q Origin %q: %d, want %d", p, c.host, c.origin, resp.StatusCode, c.want)
			}
			if c.want == http.StatusForbidden && strings.Contains(string(body), "session") {
				t.Errorf("a refused request got the run: %.80s", body)
			}
		}
	}
}

// Bidi override and isolate characters in a trace (U+202A–202E,
// U+2066–2069) could reorder what the page shows (a Trojan Source
// answer); the page and its live run.json show each as a visible mark.
func TestHTMLShowsBidiControls(t *testing.T) {
	in := "pay \u202etxt.exe\u202c and \u2066isolated\u2069 \u202a\u202b\u202d\u2067\u2068"
	r := Build([]trace.Event{{Turn: 1, Kind: trace.KindTurnInput, Payload: map[string]any{"input": in, "intent": ""}}})
	var buf bytes.Buffer
	if err := HTML(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, c := range []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069} {
		if strings.ContainsRune(page, c) {
			t.Errorf("the page holds U+%04X raw", c)
		}
	}
	if !strings.Contains(page, "pay [U+202E RLO]txt.exe[U+202C PDF] and [U+2066 LRI]isolated[U+2069 PDI]") {
		t.Errorf("the marks are missing: %s", page[strings.Index(page, "pay"):][:120])
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	b, _ := os.ReadFile("testdata/failures.jsonl")
	b = bytes.Replace(b, []byte(`"input":"`), []byte(`"input":"\u202e`), 1)
	os.WriteFile(path, b, 0o600)
	srv := httptest.NewServer((&Server{Path: path, Writing: func(string) bool { return false }}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/run.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.ContainsRune(string(body), 0x202e) || !strings.Contains(string(body), "[U+202E RLO]") {
		t.Errorf("run.json holds the override raw or lacks its mark")
	}
}
