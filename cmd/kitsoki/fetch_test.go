package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFetchRefusals runs `kitsoki fetch` on the paths that need no network:
// an unknown model, a model without a pin, and a tampered cached file (which
// the shared fetch-and-verify code deletes, naming both hashes, before any
// download is tried).
func TestFetchRefusals(t *testing.T) {
	// Should a regression ever try a download, it fails on loopback.
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	cache := t.TempDir()
	tampered := filepath.Join(cache, "models", "qwen2.5-1.5b-instruct-q4_k_m.gguf")
	if err := os.MkdirAll(filepath.Dir(tampered), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tampered, []byte("bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"fetch", "model", "nope"}, `kitsoki: unknown model "nope" (pinned models: nomic-embed-text-v1.5, qwen2.5-1.5b-instruct); to use another model run llama-server yourself and use endpoint: mode`},
		{[]string{"fetch", "model", "bge-small-en-v1.5"}, `kitsoki: model "bge-small-en-v1.5" has no sha256 pin, so managed mode refuses to fetch it; run llama-server with it yourself and use endpoint: mode`},
		{[]string{"fetch", "model"}, "kitsoki: cached model qwen2.5-1.5b-instruct (Q4_K_M GGUF) (" + tampered + "): sha256 mismatch: want 6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e, got 1d7a363ce12430881ec56c9cf1409c49c491043618e598c356e2959040872f5a (the file was deleted; the next use downloads it again)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := runCLI(t, "", append(tt.args, "--cache-dir", cache)...)
			if code != exitFailure || strings.TrimSpace(errs) != tt.stderr || out != "" {
				t.Errorf("exit %d\nstdout: %q\nstderr: %s\nwant stderr: %s", code, out, errs, tt.stderr)
			}
		})
	}
	if _, err := os.Stat(tampered); !os.IsNotExist(err) {
		t.Errorf("the tampered model was kept: %v", err)
	}
}
