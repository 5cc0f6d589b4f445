package mcpguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSessions(t *testing.T) {
	s := NewSessions()
	a, b := s.Generate(), s.Generate()
	if a == b || !strings.HasPrefix(a, "mcp-session-") {
		t.Fatalf("ids %q %q", a, b)
	}
	for _, id := range []string{a, b} {
		if term, err := s.Validate(id); term || err != nil {
			t.Errorf("Validate(%q) = %v, %v; want a live session", id, term, err)
		}
	}
	if _, err := s.Terminate(a); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, "mcp-session-made-up", ""} {
		if _, err := s.Validate(id); err == nil || s.Known(id) {
			t.Errorf("Validate(%q) accepted an unknown or deleted id", id)
		}
	}
	if !s.Known(b) {
		t.Error("deleting one session forgot another")
	}
}

// The guard hands a body within the limit to the handler intact.
func TestGuardPassesBodiesWithinTheLimit(t *testing.T) {
	var got string
	h := Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	}), 5, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("12345")))
	if rec.Code != http.StatusOK || got != "12345" {
		t.Errorf("status %d, handler read %q", rec.Code, got)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("123456")))
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("6 bytes over a limit of 5: status %d", rec.Code)
	}
}
