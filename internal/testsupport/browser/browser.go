// Package browser starts headless Chromium (Debian's package, from
// scripts/setup-browser.sh) for tests of kitsoki's HTML views, driven by
// chromedp, and gives them a folder for screenshots.
//
// A test that needs it calls New: where /usr/bin/chromium is missing the
// test is skipped with a message saying how to install it, except in CI
// (CI=true), where it fails, so CI never passes without running them.
package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Path is where Debian's chromium package puts the browser.
const Path = "/usr/bin/chromium"

// New starts a fresh browser (its own profile in a temporary folder) and
// returns a chromedp context for one tab; the browser is stopped and
// reaped when the test ends.
func New(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing in CI: make test runs scripts/setup-browser.sh (make setup-browser) first", Path)
		}
		t.Skipf("%s is not installed: run scripts/setup-browser.sh (or make setup-browser) to run the browser tests", Path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", Path, err)
	}
	return ctx
}

// Artifacts is the folder a test saves screenshots in:
// $KITSOKI_TEST_ARTIFACTS/<test name>, or <temp dir>/kitsoki-test-artifacts/
// <test name> when the variable is unset (it is kept after the test, and
// its path logged).
func Artifacts(t *testing.T) string {
	t.Helper()
	root := os.Getenv("KITSOKI_TEST_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "kitsoki-test-artifacts")
	}
	dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Eval evaluates a JavaScript expression in the page and decodes its
// value.
func Eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitFor polls a JavaScript expression until it is truthy. It has no
// deadline of its own: the test's -timeout bounds it.
func WaitFor(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

// Screenshot saves a full-page PNG of the tab as name in the test's
// artifact folder and returns its path.
func Screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 is a PNG, less a JPEG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(Artifacts(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}
