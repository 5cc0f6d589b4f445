package runtime

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/localllm"
)

// poolState asks a managed agent built on pool for its server: an open
// pool goes on to fetch the model (answered 404 by a loopback server), a
// closed one refuses at once. It returns the error text.
func poolState(t *testing.T, pool *localllm.Pool) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	pins := localllm.Pins{Models: map[string]localllm.Model{"probe": {ID: "probe",
		File: localllm.Artifact{Name: "model probe", URL: srv.URL + "/probe.gguf", SHA256: strings.Repeat("0", 64)}}}}
	a, err := localllm.New(agent.Declaration{Model: "probe", ServerBin: "/nonexistent/llama-server"},
		localllm.Config{Pool: pool, Options: localllm.Options{CacheDir: t.TempDir(), Pins: &pins, Progress: io.Discard}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Prompt: "x"}))
	if err == nil {
		t.Fatal("the probe agent answered")
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, "the run that owned them has ended"):
		return "closed"
	case strings.Contains(msg, "404"):
		return "open"
	default:
		t.Fatalf("probe: %v", err)
		return ""
	}
}

// Two runtimes opened without Config.LocalModels have a local model pool
// each (no process-wide one): closing one closes its own pool only. With
// Config.LocalModels both use the caller's pool, and neither closes it.
func TestLocalModelsBelongToTheRun(t *testing.T) {
	st := loadHello(t)
	a, err := Open(st, Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(st, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.models == nil || a.models == b.models {
		t.Fatalf("two runtimes' pools: %p and %p, want two", a.models, b.models)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := poolState(t, a.models); got != "closed" {
		t.Errorf("the closed runtime's pool is %s, want closed", got)
	}
	if got := poolState(t, b.models); got != "open" {
		t.Errorf("the other runtime's pool is %s after the first closed, want open", got)
	}

	shared := localllm.NewPool()
	defer shared.Close()
	c, err := Open(st, Config{LocalModels: shared})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(st, Config{LocalModels: shared})
	if err != nil {
		t.Fatal(err)
	}
	if c.models != shared || d.models != shared {
		t.Fatal("a runtime given Config.LocalModels does not use it")
	}
	c.Close()
	d.Close()
	if got := poolState(t, shared); got != "open" {
		t.Errorf("the caller's pool is %s after its runtimes closed, want open (the caller owns it)", got)
	}
}
