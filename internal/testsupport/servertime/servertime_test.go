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
	// The bounds scale with the machine's load instead of assuming a fast
	// one: the server's time lies within the round trips the client
	// measures (give or take the instant the server stamps its last
	// write), while counting the client's gaps between requests would add
	// two whole gaps.
	const gap = 100 * time.Millisecond
	var rtts time.Duration
	for range 3 {
		begin := time.Now()
		post()
		rtts += time.Since(begin)
		time.Sleep(gap) // client time: not the server's
	}
	got := clk.Total()
	if got < 60*time.Millisecond {
		t.Errorf("server time of 3 requests sleeping 20 ms = %v, want at least 60ms", got)
	}
	if got > rtts+gap/2 {
		t.Errorf("server time %v exceeds the client's round trips %v by more than %v: the gaps between requests were counted", got, rtts, gap/2)
	}
}
