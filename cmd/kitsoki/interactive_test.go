package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/demo"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/orchestrator"
	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/kitsoki/kitsoki/internal/trace"
)

func runInteractive(t *testing.T, input string) (int, string, string) {
	t.Helper()
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.Create(filepath.Join(t.TempDir(), "t.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	demo.Register(reg)
	defer reg.Close()
	sess, err := orchestrator.New(st, host.New(st, reg, w), w)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	r := &runner{sess: sess, out: &out, errw: &errb}
	start, err := sess.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.report(start)
	code := r.interactive(context.Background(), newLines(strings.NewReader(input)))
	return code, out.String(), errb.String()
}
