package subprocess

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/plugin"
)

// A plugin flooding responses nobody asked for cannot flood the log: the
// first few are logged one by one, then one line at 10x the count (100,
// 1000, …), each saying how many were ignored.
func TestStrayResponsesLogIsBounded(t *testing.T) {
	var logs bytes.Buffer
	c := newConn(plugin.NewLineStream(strings.NewReader(""), io.Discard, nil), nil, slog.New(slog.NewTextHandler(&logs, nil)), func(error) {})
	const n = 200_000
	for i := range n {
		if err := c.dispatch(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{}}`, 1_000_000+i)); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) > 20 || logs.Len() > 4096 {
		t.Fatalf("%d stray responses logged %d lines, %d bytes; want at most 20 lines", n, len(lines), logs.Len())
	}
	for _, want := range []string{
		"ignoring response #1000000 with no corresponding request",
		"ignoring response #1000009 with no corresponding request",
		"ignored 100 responses with no corresponding request so far (the plugin answers calls nobody made; logging again at 1000)",
		"ignored 100000 responses with no corresponding request so far",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
