package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/mcp"
	"github.com/spf13/cobra"
)

func TestStartRunDrivesAStory(t *testing.T) {
	abs, err := filepath.Abs(hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the run's trace goes under ./.kitsoki/runs
	start := startRun(&globals{logLevel: "error"}, &cobra.Command{})
	res, err := start(context.Background(), mcp.StartRunRequest{Story: abs, Intents: []string{"greet name=Ada", "bye"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != "farewell" || !res.Terminal || res.RunID == "" {
		t.Errorf("result = %+v", res)
	}
	if _, err := os.Stat(res.Trace); err != nil {
		t.Errorf("trace: %v", err)
	}
	_, err = start(context.Background(), mcp.StartRunRequest{Story: abs, Intents: []string{"bye"}})
	if err == nil || !strings.Contains(err.Error(), `intent "bye" rejected: GUARD_FAILED`) {
		t.Errorf("rejected intent: err = %v", err)
	}
}

func TestRunRefusesAnExistingTrace(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	if code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--intents", "greet name=A,bye"); code != exitOK {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	code, _, errs := runCLI(t, "", "run", hello, "--trace", tr, "--intents", "greet name=A,bye")
	if code != exitFailure || !strings.Contains(errs, "already holds a session; pass another --trace path") {
		t.Errorf("second run on the same trace: exit %d: %s", code, errs)
	}
}
