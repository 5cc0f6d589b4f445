// Package testkit holds the small helpers the tests of several packages
// share: story trees written into temporary directories, testdata copied
// out to be edited, the empty environment, and the one-call greeting story
// the cassette and flow tests replay. Only tests import it.
package testkit

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// symlinkPrefix marks a file of a tree that is a symlink: "symlink:<rel>"
// links to <rel> inside the same tree.
const symlinkPrefix = "symlink:"

// Tree writes files into a new temporary directory, its symlinks resolved
// (so paths compare equal to the ones the workspace check resolves), and
// returns the directory. See Write for the files map.
func Tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	Write(t, dir, files)
	return dir
}

// Write writes files (a slash path relative to dir → its content) under
// dir, making the directories they need. A content "symlink:<rel>" makes
// the file a symlink to dir/<rel> instead.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(body, symlinkPrefix); ok {
			if err := os.Symlink(filepath.Join(dir, filepath.FromSlash(target)), p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// WriteFile writes content to dir/rel (a slash path), making the
// directories it needs, and returns the file's path.
func WriteFile(t testing.TB, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	Write(t, dir, map[string]string{rel: content})
	return p
}

// CopyDir copies the tree at src (e.g. a testdata story) into a new
// temporary directory and returns it, so a test can edit the copy.
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	CopyInto(t, src, dst)
	return dst
}

// CopyInto copies the directories and files below src into dst (made when
// missing), each file with its mode (scripts stay executable).
func CopyInto(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// NoEnv is a getenv that knows no variable.
func NoEnv(string) string { return "" }

// GreetStory is a one-call story: lobby --greet--> greeting, whose
// on_enter asks agent.g (verb decide) for a greeting against
// schemas/greeting.json and goes back to the lobby on error.
const GreetStory = `app: {id: greet-test, version: 0.1.0}
agent_plugins:
  agent.g: {plugin: builtin.inprocess}
agents:
  greeter: {system_prompt: "Greet.", model: test-model}
world:
  greeting: {type: object, default: {}}
intents:
  greet: {slots: {name: {type: string, required: true}}}
  back: {}
root: lobby
states:
  lobby:
    on: {greet: [{target: greeting}]}
  greeting:
    view: "{{ world.greeting.text ?? '' }}"
    on_enter:
      - invoke: host.agent.decide
        agent: agent.g
        id: compose
        with:
          agent: greeter
          prompt: "Greet {{ slots.name }}."
          schema: schemas/greeting.json
          name: "{{ slots.name }}"
        bind: {greeting: submitted}
        on_error: lobby
    on: {back: [{target: lobby}]}
`

// GreetingSchema is GreetStory's schemas/greeting.json.
const GreetingSchema = `{"type":"object","required":["text"],"properties":{"text":{"type":"string","minLength":1}},"additionalProperties":false}`

// GreetFiles is GreetStory's tree: app.yaml and its schema.
func GreetFiles() map[string]string {
	return map[string]string{"app.yaml": GreetStory, "schemas/greeting.json": GreetingSchema}
}

// SyncBuffer is a bytes.Buffer that goroutines may write to while a test
// reads it: a child's output, a logger's records. The zero value is empty
// and ready.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// AliasBomb is a YAML mapping entry, bomb:, of about a kilobyte whose
// nested anchors stand for ten million nodes: seven levels of lists, each
// holding ten aliases of the level below. Put it after the keys a parser
// needs first (a kind: line); every parser of user YAML must refuse it
// (internal/base/yamlnode.CheckExpansion) before walking it.
func AliasBomb() string {
	var b strings.Builder
	b.WriteString("bomb:\n  - &b0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 6; i++ {
		b.WriteString("  - &b" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*b" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// AliasBombError is the text every refusal of AliasBomb holds.
const AliasBombError = "YAML aliases make this document too large"

// SwapSymlink makes link a symlink that a goroutine flips between
// pointing at a and at b, as fast as it can, until the returned stop is
// called (stop waits for it and reports how many flips it made). The
// symlink tests of issue 28 run their operations against it: each one
// meets whichever target link has at that instant, or a check and an open
// of the same path meet different ones.
func SwapSymlink(t testing.TB, link, a, b string) (stop func() int) {
	t.Helper()
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	tmp := link + ".swap"
	done := make(chan struct{})
	flips := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				flips <- n
				return
			default:
			}
			target := a
			if n%2 == 0 {
				target = b
			}
			_ = os.Remove(tmp)
			if os.Symlink(target, tmp) == nil && os.Rename(tmp, link) == nil {
				n++
			}
		}
	}()
	return func() int {
		close(done)
		return <-flips
	}
}

// SwapDir makes a goroutine flip dir, a real directory, with a symlink to
// outside, as fast as it can, until the returned stop is called (stop
// waits for it, puts the directory back and reports how many flips it
// made). A path resolved while dir was the directory is then opened, now
// and then, through the symlink: the check-then-open race of issue 28.
func SwapDir(t testing.TB, dir, outside string) (stop func() int) {
	t.Helper()
	hold, evil := dir+".hold", dir+".evil"
	if err := os.Symlink(outside, evil); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	flips := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				flips <- n
				return
			default:
			}
			// dir: the directory, then the symlink, then the directory.
			if os.Rename(dir, hold) == nil {
				if os.Rename(evil, dir) == nil {
					n++
					_ = os.Rename(dir, evil)
				}
				if os.Rename(hold, dir) != nil {
					// The code under test made dir again while it was
					// away (a MkdirAll of a file's directory): that one
					// is inside, and goes.
					_ = os.RemoveAll(dir)
					_ = os.Rename(hold, dir)
				}
			}
			// Leave the directory in place a moment, so that checks
			// pass as often as not.
			time.Sleep(20 * time.Microsecond)
		}
	}()
	return func() int {
		close(done)
		return <-flips
	}
}
