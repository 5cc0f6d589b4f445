package secret_test

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// TestHandler: a logger whose handler is wrapped masks the message, string
// attributes (in groups and WithAttrs too), errors and keys, by the same
// rule as Text; with nothing to mask the handler is returned as it is.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	base := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	m := secret.New([]string{long, "crash"})
	log := slog.New(m.Handler(base)).With("plugin", "p "+long)
	log.Warn("plugin stderr "+long, "line", "crash", "err", errors.New("dial "+long), "n", 3,
		slog.Group("g", "k"+long, "crashed"))
	want := `level=WARN msg="plugin stderr REDACTED" plugin="p REDACTED" line=REDACTED err="dial REDACTED" n=3 g.kREDACTED=crashed` + "\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("masked log line (-want +got):\n%s", diff)
	}
	if got := secret.New(nil).Handler(base); got != slog.Handler(base) {
		t.Errorf("Handler with no secrets = %T, want the handler itself", got)
	}
}
