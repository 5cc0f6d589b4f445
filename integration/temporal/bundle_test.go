package temporal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
)

// copyHelloTo copies the hello story into a fresh directory and returns
// it.
func copyHelloTo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(storiesDir, "hello"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sessionBundle is the story bundle `kitsoki session show` reports.
func sessionBundle(t *testing.T, ctx context.Context, dir, id string, flags []string) string {
	t.Helper()
	out, errs, code := kitsokiRun(t, ctx, dir, append([]string{"session", "show", id, "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("session show %s: exit %d: %s", id, code, errs)
	}
	var show struct {
		Session struct {
			Story cluster.StoryRef `json:"story"`
		} `json:"session"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil {
		t.Fatalf("session show %s: %v\n%s", id, err, out)
	}
	if !strings.HasPrefix(show.Session.Story.Bundle, "sha256:") {
		t.Fatalf("session %s names no bundle:\n%s", id, out)
	}
	return show.Session.Story.Bundle
}

// The story travels with the session (issue 32): `cd story && kitsoki run
// app.yaml --temporal` runs on a worker started elsewhere with no
// --stories and no copy of the story; the worker runs the bundle the
// client put in the shared blob store. A story edited mid-session leaves
// the running session on its version: a reattach after the edit is
// warned, and the session still shows the story it started with; a new
// session runs the edited story, as another bundle.
func TestStoryTravelsWithTheSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queue := "q-bundle"
	startWorker(t, t.TempDir(), "--task-queue", queue) // its own empty directory: no stories there
	story := copyHelloTo(t)
	flags := []string{"--temporal", server.Addr, "--task-queue", queue}
	out, errs, code := kitsokiRun(t, ctx, story, append([]string{"run", "app.yaml", "--intents", "greet name=Ada style=formal", "--session", "bundle-1"}, flags...)...)
	if code != 6 || !strings.Contains(out, "Good day, Ada.") {
		t.Fatalf("run from the story's directory: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	first := sessionBundle(t, ctx, story, "bundle-1", flags)

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
	out, errs, code = kitsokiRun(t, ctx, story, append([]string{"run", "app.yaml", "--intents", "greet name=Bob,bye", "--session", "bundle-2"}, flags...)...)
	if code != 0 || !strings.Contains(out, "Farewell, edited.") {
		t.Errorf("a new session of the edited story: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if second := sessionBundle(t, ctx, story, "bundle-2", flags); second == first {
		t.Errorf("the edited story ran as the same bundle %s", first)
	}
}

// A worker that does not share the client's blob store cannot find the
// bundle: the session fails at its start, and kitsoki run prints the
// error naming the bundle's digest and the fix.
func TestMissingBundle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queue := "q-bundle-missing"
	elsewhere := t.TempDir()
	startWorker(t, t.TempDir(), "--task-queue", queue, "--blobs", elsewhere)
	dir := copyHelloTo(t)
	mine := t.TempDir()
	_, errs, code := kitsokiRun(t, ctx, dir, "run", "app.yaml", "--intents", "greet name=Ada", "--session", "missing-1",
		"--temporal", server.Addr, "--task-queue", queue, "--blobs", mine)
	digest := bundleDigest(t, dir, mine)
	for _, want := range []string{
		"kitsoki: session missing-1 is failed: ",
		"the session's story bundle " + digest + ": blob " + digest + " is not in the blob store " + elsewhere +
			": blob missing; every worker and client of the cluster must share one blob directory (--blobs, $KITSOKI_BLOBS_DIR)",
		"; start a new session\n",
	} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and it to contain %q", code, errs, want)
		}
	}
}

// A bundle damaged in the blob store after the client stored it fails
// the session with the digest and the file to restore.
func TestCorruptBundle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queue := "q-bundle-corrupt"
	blobs := t.TempDir()
	startWorker(t, t.TempDir(), "--task-queue", queue, "--blobs", blobs)
	dir := copyHelloTo(t)
	app := filepath.Join(dir, "app.yaml")
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	store := &cluster.Blobs{Dir: blobs}
	ref, err := cluster.PackStory(app, st, store, "")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(blobs, "sha256", ref.Bundle[7:9], ref.Bundle[7:])
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Dial(ctx, cluster.ClientOptions{HostPort: server.Addr, TaskQueue: queue, DataConverter: store.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx, cluster.SessionInput{Story: ref, SessionID: "corrupt-1"}, st.App.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Attach(ctx, "corrupt-1")
	for _, want := range []string{"session corrupt-1 is failed: ",
		"the session's story bundle " + ref.Bundle + ": blob " + ref.Bundle + " in the blob store " + blobs + ": blob corrupt: its content hashes to sha256:",
		"; restore the file " + file + " from another copy of the store"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("attach: %v\nwant it to contain %q", err, want)
		}
	}
}

// bundleDigest is the digest the story in dir packs to.
func bundleDigest(t *testing.T, dir, blobs string) string {
	t.Helper()
	app := filepath.Join(dir, "app.yaml")
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := cluster.PackStory(app, st, &cluster.Blobs{Dir: blobs}, "")
	if err != nil {
		t.Fatal(err)
	}
	return ref.Bundle
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

	// delete removes the workflow and its history (the server does it in
	// the background): the session is then gone for every command.
	cl := []string{"--temporal", server.Addr, "--task-queue", queue}
	_, errs, code := kitsokiRun(t, ctx, story, append([]string{"session", "delete", "bot:cluster-1"}, cl...)...)
	if want := "kitsoki: deleted session bot:cluster-1 on " + server.Addr + " (namespace default)\n"; code != 0 || errs != want {
		t.Fatalf("delete: exit %d, stderr %q, want %q", code, errs, want)
	}
	for {
		_, errs, code = kitsokiRun(t, ctx, story, append([]string{"session", "delete", "bot:cluster-1"}, cl...)...)
		if code == 1 && strings.Contains(errs, "session bot:cluster-1: no such session") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("a deleted session is still there: exit %d: %s", code, errs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
