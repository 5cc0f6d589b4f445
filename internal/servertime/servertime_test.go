package servertime

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestClockCountsHandlerTime: a handler that sleeps 20 ms per request is
// measured at no less than that, and the client's own delay between
// requests is not counted.
func TestClockCountsHandlerTime(t *testing.T) {
	var clk Clock
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(20 * time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Listener = clk.Wrap(srv.Listener)
	srv.Start()
	defer srv.Close()
	post := func() {
		resp, err := srv.Client().Post(srv.URL, "text/plain", strings.NewReader("hello"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post()
	clk.Reset()
	if got := clk.Total(); got != 0 {
		t.Fatalf("Total after Reset = %v, want 0", got)
	}
	for range 3 {
		post()
		time.Sleep(50 * time.Millisecond) // client time: not the server's
	}
	got := clk.Total()
	if got < 60*time.Millisecond || got >= 150*time.Millisecond {
		t.Errorf("server time of 3 requests sleeping 20 ms = %v, want [60ms, 150ms)", got)
	}
}
