package localllm

import (
	"net/http"
	"testing"
)

// TestSidecarHoldCloseOnce: closing a hold twice releases its sidecar
// once, so another holder keeps it; the last holder's close removes it
// from the pool.
func TestSidecarHoldCloseOnce(t *testing.T) {
	pool := NewPool()
	cfg := sidecarConfig{model: "m"}
	var a, b sidecarHold
	a.sidecar, b.sidecar = pool.acquire(cfg), pool.acquire(cfg)
	client := &http.Client{}
	held := func() bool {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		_, ok := pool.sidecars[cfg.key()]
		return ok
	}
	for range 2 {
		if err := a.close(client, pool); err != nil {
			t.Fatal(err)
		}
	}
	if !held() {
		t.Fatal("a second close of one hold released the other holder's sidecar")
	}
	if err := b.close(client, pool); err != nil {
		t.Fatal(err)
	}
	if held() {
		t.Error("the last holder's close left the sidecar in the pool")
	}
	var never sidecarHold // endpoint mode: nothing acquired
	if err := never.close(client, pool); err != nil {
		t.Errorf("close without a sidecar: %v", err)
	}
}
