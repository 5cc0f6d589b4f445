package kitsoki_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki"
)

// A durable session created by key is picked up by Resume, in a new
// Session, where it stopped; while one Session holds it, Resume is a
// *BusyError; a second create with the key is refused.
func TestCreateAndResumeByKey(t *testing.T) {
	dir := t.TempDir()
	opts := []kitsoki.Option{kitsoki.WithCassette(demoTape), kitsoki.WithSessionsDir(dir)}
	s, err := kitsoki.Open(helloApp, append(opts, kitsoki.WithKey("chat:room-1/thread-7"))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.Key() != "chat:room-1/thread-7" || s.ID() == kitsoki.DefaultSessionID {
		t.Errorf("key %q id %q", s.Key(), s.ID())
	}
	do(t, s, "greet name=Ada style=formal")

	_, err = kitsoki.Resume(t.Context(), "chat:room-1/thread-7", opts...)
	var busy *kitsoki.BusyError
	if !errors.As(err, &busy) || busy.ID != s.ID() || !strings.Contains(err.Error(), "is busy") {
		t.Fatalf("Resume while held = %v, want a *BusyError", err)
	}
	if _, err := kitsoki.Open(helloApp, append(opts, kitsoki.WithKey("chat:room-1/thread-7"))...); err == nil ||
		!strings.Contains(err.Error(), "the key names a session already") {
		t.Errorf("a second create with the key: %v", err)
	}
	world := s.World()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := kitsoki.Resume(t.Context(), "chat:room-1/thread-7", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.ID() != s.ID() || r.State() != "greeted" {
		t.Errorf("resumed %s in %q, want %s in greeted", r.ID(), r.State(), s.ID())
	}
	if d := cmp.Diff(world, r.World()); d != "" {
		t.Errorf("world (-before +resumed):\n%s", d)
	}
	out := do(t, r, "bye")
	if !out.Done {
		t.Errorf("bye did not finish: %+v", out)
	}
	b, err := r.Trace()
	if err != nil || !strings.Contains(string(b), `"kind":"kitsoki.resumed"`) {
		t.Errorf("the journal has no resume marker: %v", err)
	}
}

// Resume of a session whose story changed so that it decides differently
// is refused; WithFork goes on in a new session.
func TestResumeOfAChangedStory(t *testing.T) {
	dir, sessions := t.TempDir(), t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("stories/hello")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app.yaml")
	opts := []kitsoki.Option{kitsoki.WithCassette(filepath.Join(dir, "cassettes", "demo.yaml")), kitsoki.WithSessionsDir(sessions)}
	s, err := kitsoki.Open(app, append(opts, kitsoki.WithKey("t:1"))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	do(t, s, "greet name=Ada style=formal")
	id := s.ID()
	s.Close()

	b, _ := os.ReadFile(app)
	changed := strings.Replace(string(b), "        - target: greeting\n", "        - target: farewell\n", 1)
	if changed == string(b) {
		t.Fatal("stories/hello/app.yaml changed shape; update the test")
	}
	if err := os.WriteFile(app, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = kitsoki.Resume(t.Context(), "t:1", opts...)
	if err == nil || !strings.Contains(err.Error(), "the story changed and decides differently") {
		t.Fatalf("Resume of a changed story = %v", err)
	}
	f, err := kitsoki.Resume(t.Context(), "t:1", append(opts, kitsoki.WithFork())...)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.ID() == id || f.State() != "lobby" {
		t.Errorf("fork %s in %q, want a new id in lobby (turn 0, the last that matched)", f.ID(), f.State())
	}
}

// A durable session saved inside a parallel state nested in another's
// region resumes there, from its journal, and goes on: the nested state's
// done event moves the outer region, and the run ends.
func TestResumeInsideNestedParallel(t *testing.T) {
	const app = "internal/check/kitsokiformat/testdata/parallel/app.yaml"
	const mid = "release#(release.build.parts#release.build.parts.back.todo|release.build.parts.front.done)|release.docs.draft"
	opts := []kitsoki.Option{kitsoki.WithSessionsDir(t.TempDir())}
	s, err := kitsoki.Open(app, append(opts, kitsoki.WithKey("test:nested"))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	do(t, s, "start")
	do(t, s, "fe")
	if s.State() != mid {
		t.Fatalf("state %q, want %q", s.State(), mid)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := kitsoki.Resume(t.Context(), "test:nested", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.State() != mid {
		t.Fatalf("resumed in %q, want %q", r.State(), mid)
	}
	if out := do(t, r, "be"); out.Done || r.State() != "release#release.build.shipped|release.docs.draft" {
		t.Fatalf("be: done %v in %q", out.Done, r.State())
	}
	if out := do(t, r, "note"); !out.Done {
		t.Errorf("note: not done in %q", r.State())
	}
	if got := r.World()["log"]; got != ">parts>built" {
		t.Errorf("log = %v, want >parts>built (the ping reached shipped, which has no arm for it)", got)
	}
}
