package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// testStoriesEnv is a kitsoki worker process serving testdata/stories on
// a task queue of the test's own.
func testStoriesEnv(t *testing.T, workerArgs ...string) clusterEnv {
	t.Helper()
	stories, err := filepath.Abs("testdata/stories")
	if err != nil {
		t.Fatal(err)
	}
	queue := "q-" + strings.ReplaceAll(t.Name(), "/", "-")
	startWorker(t, t.TempDir(), append([]string{"--stories", stories, "--task-queue", queue}, workerArgs...)...)
	return clusterEnv{stories: stories, flags: []string{"--temporal", server.Addr, "--task-queue", queue}}
}

// afterSessionLine is stderr without its first line (a local run names
// its trace file there, a run on the cluster the cluster) and without the
// reattach hint a run on the cluster adds when it stops early.
func afterSessionLine(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	var keep []string
	for _, l := range strings.SplitAfter(rest, "\n") {
		if !strings.Contains(l, "goes on on the cluster; reattach with") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// TestSayOnClusterMatchesLocalRun: kitsoki run --temporal --say routes
// free text on the workers as a local kitsoki run --say routes it (the
// exact tier; the synonym and template tiers only with --semantic-routing,
// which travels in the session's input): the same stdout, stderr after
// the session line and exit code, and kitsoki session trace --temporal
// writes the local trace's events (timestamps aside).
func TestSayOnClusterMatchesLocalRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := testStoriesEnv(t)
	says := []string{"--say", "forecast for Tokyo", "--say", "weather report for Paris", "--say", "bye"}
	tests := []struct {
		name     string
		flags    []string
		code     int
		lastLine string
	}{
		{"semantic", []string{"--semantic-routing"}, 0, "Bye from paris.\n"},
		// Without the flag no tier routes the first line and the router
		// (an alias nothing binds) fails, locally as on the worker.
		{"exact only", nil, 4, "Ask about the weather.\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run", "say/app.yaml"}, says...), tc.flags...)
			localTrace := filepath.Join(t.TempDir(), "local.jsonl")
			wantOut, wantErr, wantCode := kitsokiRun(t, ctx, e.stories, append(args, "--trace", localTrace)...)
			if wantCode != tc.code || !strings.HasSuffix(wantOut, tc.lastLine) {
				t.Fatalf("local run: exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", wantCode, tc.code, wantOut, wantErr)
			}
			id := "say-" + strings.ReplaceAll(tc.name, " ", "-")
			out, errs, code := e.run(t, ctx, append(args, "--session", id)...)
			if code != wantCode {
				t.Errorf("run --temporal: exit %d, local %d\nstderr:\n%s", code, wantCode, errs)
			}
			if d := cmp.Diff(wantOut, out); d != "" {
				t.Errorf("stdout (-local +cluster):\n%s", d)
			}
			if d := cmp.Diff(afterSessionLine(wantErr), afterSessionLine(errs)); d != "" {
				t.Errorf("stderr after the session line (-local +cluster):\n%s", d)
			}
			remoteTrace := filepath.Join(t.TempDir(), "remote.jsonl")
			if _, errs, code := e.run(t, ctx, "session", "trace", id, "-o", remoteTrace); code != 0 {
				t.Fatalf("session trace: exit %d: %s", code, errs)
			}
			lh, levs := readTrace(t, localTrace)
			rh, revs := readTrace(t, remoteTrace)
			if d := cmp.Diff(lh, rh); d != "" {
				t.Errorf("trace header (-local +cluster):\n%s", d)
			}
			routed := 0
			for _, ev := range levs {
				if ev.Kind == "turn.routed" {
					routed++
				}
			}
			if routed == 0 {
				t.Fatalf("the local trace routed no line: %d events", len(levs))
			}
			if d := cmp.Diff(levs, revs, timesAside...); d != "" {
				t.Errorf("trace events (-local +cluster, ts and durations aside):\n%s", d)
			}
		})
	}

	// The session that stopped goes on routing as it started: a reattach
	// with other routing flags is refused (exit 2) and takes no turn.
	out, errs, code := e.run(t, ctx, "run", "say/app.yaml", "--session", "say-exact-only", "--semantic-routing", "--say", "forecast for Oslo")
	want := "session say-exact-only routes free text with the story's routing (no routing flags), as it was started: " +
		"the routing flags set how a new session routes; give the session's or none to reattach, or start a new session\n"
	if code != 2 || out != "" || errs != want {
		t.Errorf("reattach with --semantic-routing: exit %d (want 2)\nstdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", code, out, errs, want)
	}
}

// TestLargeAnswerThroughSharedBlobs: a worker and kitsoki run --temporal
// sharing --blobs DIR run a session whose host.run answer is 300,000
// bytes (over the 256 KiB threshold): it completes as locally and DIR
// holds the blob; kitsoki session show with another, empty blob dir
// cannot read the session's world and names the digest and the fix.
func TestLargeAnswerThroughSharedBlobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	blobs := t.TempDir()
	e := testStoriesEnv(t, "--blobs", blobs)
	wantOut, wantErr, wantCode := kitsokiRun(t, ctx, e.stories, "run", "big/app.yaml", "--intents", "go", "--trace", filepath.Join(t.TempDir(), "t.jsonl"))
	if wantCode != 0 || wantOut != "Nothing read yet.\nRead 300000 bytes.\n" {
		t.Fatalf("local run: exit %d\nstdout:\n%s\nstderr:\n%s", wantCode, wantOut, wantErr)
	}
	out, errs, code := e.run(t, ctx, "run", "big/app.yaml", "--intents", "go", "--session", "big-1", "--blobs", blobs)
	if code != 0 || out != wantOut {
		t.Fatalf("run --temporal: exit %d, stdout %q (local %q)\nstderr:\n%s", code, out, wantOut, errs)
	}
	var large []string
	if err := filepath.WalkDir(blobs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil && info.Size() > 256<<10 {
			large = append(large, path)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(large) == 0 {
		t.Fatalf("the blob dir %s holds no blob over 256 KiB", blobs)
	}
	for _, p := range large {
		rel, _ := filepath.Rel(blobs, p)
		if !regexp.MustCompile(`^sha256/[0-9a-f]{2}/[0-9a-f]{64}$`).MatchString(filepath.ToSlash(rel)) {
			t.Errorf("blob file %s is not sha256/<hex[:2]>/<hex>", rel)
		}
	}

	// The session's trace holds the answer and its result the world: a
	// client whose blob dir is empty cannot decode them, and says which
	// blob and what to do. session trace fails (exit 1); session show
	// reports what it read and the error in its JSON.
	empty := t.TempDir()
	want := regexp.MustCompile(`blob sha256:[0-9a-f]{64} is not in the blob store ` + regexp.QuoteMeta(empty) +
		`: blob missing; every worker and client of the cluster must share one blob directory \(--blobs, \$KITSOKI_BLOBS_DIR\)`)
	out, errs, code = e.run(t, ctx, "session", "trace", "big-1", "-o", filepath.Join(t.TempDir(), "t.jsonl"), "--blobs", empty)
	if code != 1 || !want.MatchString(errs) {
		t.Errorf("session trace with an empty blob dir: exit %d (want 1)\nstdout:\n%s\nstderr:\n%s\nwant stderr matching %s", code, out, errs, want)
	}
	out, errs, code = e.run(t, ctx, "session", "show", "big-1", "--blobs", empty, "--json")
	var shown struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || code != 0 || !want.MatchString(shown.Error) {
		t.Errorf("session show with an empty blob dir: exit %d (%v)\nstdout:\n%s\nstderr:\n%s\nwant an error field matching %s", code, err, out, errs, want)
	}
	if m := regexp.MustCompile(`sha256:([0-9a-f]{64})`).FindStringSubmatch(errs); m != nil {
		if _, err := os.Stat(filepath.Join(blobs, "sha256", m[1][:2], m[1])); err != nil {
			t.Errorf("the digest the error names is not a blob of the shared dir: %v", err)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("the reading client wrote into its blob dir: %v", entries)
	}
}

// TestBackAcrossContinueAsNew: on a real server a session that continues
// as new after every turn keeps its room history: a back update with no
// history is refused with the local text (orchestrator.ErrNoHistory), and
// after a greeting, in a later run, back returns to the room a local
// Back returns to.
func TestBackAcrossContinueAsNew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newClusterEnv(t)
	c, st := startContinuingHello(ctx, t, e, "back-1")
	if _, err := c.Intent(ctx, "back-1", cluster.IntentRequest{Back: true}); !errors.Is(err, orchestrator.ErrNoHistory) {
		t.Fatalf("back with no history: %v, want %v", err, orchestrator.ErrNoHistory)
	}
	greet := cluster.IntentRequest{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada"}}, Input: "greet name=Ada"}
	if _, err := c.Intent(ctx, "back-1", greet); err != nil {
		t.Fatal(err)
	}
	back, err := c.Intent(ctx, "back-1", cluster.IntentRequest{Back: true})
	if err != nil {
		t.Fatal(err)
	}

	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "back-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sess := rt.Session()
	if _, err := sess.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Turn(ctx, "greet", map[string]any{"name": "Ada"}, "greet name=Ada"); err != nil {
		t.Fatal(err)
	}
	want, err := sess.Back(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if back.State != want.State || back.Turn != sess.TurnNumber() || back.View != want.View {
		t.Errorf("back on the cluster: state %q turn %d view %q; locally %q turn %d view %q",
			back.State, back.Turn, back.View, want.State, sess.TurnNumber(), want.View)
	}
	runs := 0
	for it := c.Temporal().GetWorkflowHistory(ctx, "back-1", "", false, 0); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId() != "" {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("the running run continued %d runs, want 1 (the back came in the run after the greeting's)", runs)
	}
}
