package temporal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The story travels with the session (issue 32): `cd story && kitsoki run
// app.yaml --temporal` runs on a worker started elsewhere with no
// --stories and no copy of the story; the worker runs the bundle the
// client put in the shared blob store. A story edited mid-session leaves
// the running session on its version: a reattach after the edit is
// warned, and the session still shows the story it started with.
func TestStoryTravelsWithTheSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queue := "q-bundle"
	startWorker(t, t.TempDir(), "--task-queue", queue) // its own empty directory: no stories there
	story := t.TempDir()
	if err := os.CopyFS(story, os.DirFS(filepath.Join(storiesDir, "hello"))); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--temporal", server.Addr, "--task-queue", queue}
	out, errs, code := kitsokiRun(t, ctx, story, append([]string{"run", "app.yaml", "--intents", "greet name=Ada style=formal", "--session", "bundle-1"}, flags...)...)
	if code != 6 || !strings.Contains(out, "Good day, Ada.") {
		t.Fatalf("run from the story's directory: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	app := filepath.Join(story, "app.yaml")
	b, err := os.ReadFile(app)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "Bye! {{ world.greetings }} greeting(s) today.", "Farewell, edited.", 1)
	if edited == string(b) {
		t.Fatal("stories/hello/app.yaml changed shape: its farewell view is not where the test looks")
	}
	if err := os.WriteFile(app, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = kitsokiRun(t, ctx, story, append([]string{"run", "app.yaml", "--intents", "greet name=Ada style=formal,bye", "--session", "bundle-1"}, flags...)...)
	if code != 0 || !strings.Contains(out, "Bye! 1 greeting(s) today.") || strings.Contains(out, "edited") {
		t.Fatalf("reattach after the edit: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the story the session started with", code, out, errs)
	}
	if !strings.Contains(errs, "the workers run the session's") {
		t.Errorf("the reattach did not warn that the local file changed:\n%s", errs)
	}

	// A new session runs the edited story: it is a new version.
	out, errs, code = kitsokiRun(t, ctx, story, append([]string{"run", "app.yaml", "--intents", "greet name=Bob,bye"}, flags...)...)
	if code != 0 || !strings.Contains(out, "Farewell, edited.") {
		t.Errorf("a new session of the edited story: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// The session API on the cluster: session create --key, continue by key
// and inspect with --json, as a bot drives a local session; the story is
// the bundle the create packed.
func TestSessionAPIOnTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queue := "q-session-api"
	startWorker(t, t.TempDir(), "--task-queue", queue)
	story := t.TempDir()
	if err := os.CopyFS(story, os.DirFS(filepath.Join(storiesDir, "hello"))); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--temporal", server.Addr, "--task-queue", queue, "--json"}
	frame := func(args ...string) (map[string]any, int) {
		t.Helper()
		out, errs, code := kitsokiRun(t, ctx, story, append(args, flags...)...)
		var f map[string]any
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatalf("%v: exit %d, no frame: %v\nstdout:\n%s\nstderr:\n%s", args, code, err, out, errs)
		}
		return f, code
	}
	f, code := frame("session", "create", "app.yaml", "--key", "bot:cluster-1")
	if code != 0 || f["state"] != "lobby" || f["outcome"] != "started" {
		t.Fatalf("create: exit %d, %v", code, f)
	}
	f, code = frame("session", "continue", "bot:cluster-1", "--intent", "greet name=Ada style=formal")
	if code != 0 || f["state"] != "greeted" {
		t.Fatalf("continue: exit %d, %v", code, f)
	}
	f, code = frame("session", "continue", "bot:cluster-1", "--intent", "greet name=Bob")
	if code != 3 || f["outcome"] != "rejected" {
		t.Errorf("a rejected continue: exit %d, %v", code, f)
	}
	f, code = frame("session", "inspect", "bot:cluster-1")
	if w, _ := f["world"].(map[string]any); code != 0 || f["state"] != "greeted" || w["name"] != "Ada" {
		t.Errorf("inspect: exit %d, %v", code, f)
	}
	if _, code := frame("session", "create", "app.yaml", "--key", "bot:cluster-1"); code != 1 {
		t.Errorf("a second create with the key: exit %d", code)
	}
}
