package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	ks "github.com/kitsoki/kitsoki"
	kcluster "github.com/kitsoki/kitsoki/cluster"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// pruneNamespace is the dev server's namespace that only
// TestSessionPruneOnTheCluster uses: it prunes every idle session in it.
const pruneNamespace = "kitsoki-prune"

// apiEnv is a kitsoki worker process on its own task queue (and
// namespace), a copy of the hello story to create sessions from, and the
// flags that point the session commands at them.
type apiEnv struct {
	story string
	flags []string
}

func newAPIEnv(t *testing.T, namespace string) apiEnv {
	t.Helper()
	queue := "q-" + t.Name()
	args := []string{"--task-queue", queue}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	startWorker(t, t.TempDir(), args...)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(storiesDir, "hello"))); err != nil {
		t.Fatal(err)
	}
	return apiEnv{story: dir, flags: append([]string{"--temporal", server.Addr}, args...)}
}

// run runs kitsoki session ARGS with the cluster's flags.
func (e apiEnv) run(t *testing.T, ctx context.Context, args ...string) (string, string, int) {
	t.Helper()
	return kitsokiRun(t, ctx, e.story, append(append([]string{"session"}, args...), e.flags...)...)
}

// frame runs a session command with --json and decodes its frame.
func (e apiEnv) frame(t *testing.T, ctx context.Context, args ...string) (map[string]any, int) {
	t.Helper()
	out, errs, code := e.run(t, ctx, append(args, "--json")...)
	var f map[string]any
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("%v: exit %d, no frame: %v\nstdout:\n%s\nstderr:\n%s", args, code, err, out, errs)
	}
	return f, code
}

func worldOf(f map[string]any) map[string]any {
	w, _ := f["world"].(map[string]any)
	return w
}

// TestSessionForkOnTheCluster forks a running cluster session at its
// current turn (TestSessionForkOnTheClusterAtAnEarlierTurn at earlier
// ones) with `kitsoki session fork --temporal`: the fork goes on
// from the old session's state and world on the same story bundle, the
// old session is left as it was, and the refusals say what to do.
func TestSessionForkOnTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := newAPIEnv(t, "")
	if f, code := e.frame(t, ctx, "create", "app.yaml", "--key", "bot:fork-1"); code != 0 || f["state"] != "lobby" {
		t.Fatalf("create: exit %d, %v", code, f)
	}
	src, code := e.frame(t, ctx, "continue", "bot:fork-1", "--intent", "greet name=Ada style=formal")
	if code != 0 || src["state"] != "greeted" {
		t.Fatalf("continue: exit %d, %v", code, src)
	}
	turn := int64(src["session"].(map[string]any)["turn"].(float64))

	out, errs, code := e.run(t, ctx, "fork", "bot:fork-1")
	fork := strings.TrimSpace(out)
	if code != 0 || fork == "" || !strings.Contains(errs, "kitsoki: forked session "+fork+" from turn "+strconv.FormatInt(turn, 10)+" of bot:fork-1") {
		t.Fatalf("fork: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	f, code := e.frame(t, ctx, "inspect", fork)
	if code != 0 || f["state"] != "greeted" || worldOf(f)["name"] != "Ada" || f["session"].(map[string]any)["turn"].(float64) != float64(turn) {
		t.Fatalf("the fork's inspect: exit %d, %v", code, f)
	}
	if f["session"].(map[string]any)["story_hash"] != src["session"].(map[string]any)["story_hash"] {
		t.Errorf("the fork runs %v, the session %v", f["session"], src["session"])
	}

	// The story edited after the fork changes nothing for either: both
	// run the bundle the session started with.
	if err := os.WriteFile(filepath.Join(e.story, "app.yaml"), []byte("app: {id: broken}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, code := e.frame(t, ctx, "continue", fork, "--intent", "again"); code != 0 || f["state"] != "lobby" {
		t.Fatalf("the fork's again: exit %d, %v", code, f)
	}
	if f, code := e.frame(t, ctx, "continue", fork, "--intent", "greet name=Grace"); code != 0 || f["state"] != "greeted" || worldOf(f)["name"] != "Grace" {
		t.Fatalf("the fork's greet: exit %d, %v", code, f)
	}
	if f, code := e.frame(t, ctx, "inspect", "bot:fork-1"); code != 0 || f["state"] != "greeted" || worldOf(f)["name"] != "Ada" {
		t.Errorf("the forked session changed: exit %d, %v", code, f)
	}

	// The fork's trace starts at the fork, its header naming where from.
	out, errs, code = e.run(t, ctx, "trace", fork)
	if code != 0 {
		t.Fatalf("trace: exit %d: %s", code, errs)
	}
	var head map[string]any
	if err := json.Unmarshal([]byte(firstLine(out)), &head); err != nil {
		t.Fatalf("trace header: %v\n%s", err, out)
	}
	if head["forked_from"] != "bot:fork-1" || head["forked_at_turn"] != float64(turn) || head["session_id"] != fork {
		t.Errorf("the fork's header: %v", head)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"an unknown key", []string{"fork", "bot:nope"}, 1,
			[]string{"kitsoki: session bot:nope: no such session on the cluster", "kitsoki session list --temporal " + server.Addr + " shows them"}},
		{"a turn not taken", []string{"fork", "bot:fork-1", "--at-turn", "9"}, 2,
			[]string{"session bot:fork-1 has no finished turn 9: its turns are 0 to " + strconv.FormatInt(turn, 10), "give --at-turn from 0 to " + strconv.FormatInt(turn, 10)}},
		{"a negative turn", []string{"fork", "bot:fork-1", "--at-turn", "-1"}, 2,
			[]string{"session bot:fork-1 has no finished turn -1: its turns are 0 to " + strconv.FormatInt(turn, 10)}},
	} {
		_, errs, code := e.run(t, ctx, tc.args...)
		for _, w := range tc.want {
			if code != tc.code || !strings.Contains(errs, w) {
				t.Errorf("%s: exit %d (want %d), stderr %q, want it to say %q", tc.name, code, tc.code, errs, w)
			}
		}
	}
	if _, code := e.frame(t, ctx, "continue", fork, "--intent", "bye"); code != 0 {
		t.Fatalf("the fork's bye: exit %d", code)
	}
	_, errs, code = e.run(t, ctx, "fork", fork)
	if want := "cannot fork session " + fork + ": session " + fork + " finished in state \"farewell\""; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("a finished fork: exit %d, stderr %q, want %q", code, errs, want)
	}
}

// TestSessionForkOnTheClusterAtAnEarlierTurn forks a cluster session at
// turns before its current one: each fork stands where a local run of the
// same inputs stood after that turn (state and world), its header names
// the turn, and it goes on from there; the old session is left as it is.
// A fork of a fork is forked at a turn before its fork, at its fork and
// after it.
func TestSessionForkOnTheClusterAtAnEarlierTurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := newAPIEnv(t, "")
	inputs := []string{"greet name=Ada style=formal", "again", "greet name=Grace"}

	// The local run of the same inputs, inspected after every turn.
	dir := t.TempDir()
	local := func(args ...string) map[string]any {
		t.Helper()
		out, errs, code := kitsokiRun(t, ctx, e.story, append(append([]string{"session"}, args...), "--sessions-dir", dir, "--json")...)
		var f map[string]any
		if err := json.Unmarshal([]byte(out), &f); code != 0 || err != nil {
			t.Fatalf("local %v: exit %d, %v\n%s", args, code, err, errs)
		}
		return f
	}
	atTurn := []map[string]any{local("create", "app.yaml", "--key", "bot:local")}
	for _, in := range inputs {
		local("continue", "bot:local", "--intent", in)
		atTurn = append(atTurn, local("inspect", "bot:local"))
	}

	if _, code := e.frame(t, ctx, "create", "app.yaml", "--key", "bot:fork-2"); code != 0 {
		t.Fatalf("create: exit %d", code)
	}
	for _, in := range inputs {
		if _, code := e.frame(t, ctx, "continue", "bot:fork-2", "--intent", in); code != 0 {
			t.Fatalf("continue %q: exit %d", in, code)
		}
	}
	var last string // the fork at the last turn before the current one
	for n := range int64(len(inputs)) {
		at := strconv.FormatInt(n, 10)
		out, errs, code := e.run(t, ctx, "fork", "bot:fork-2", "--at-turn", at)
		fork := strings.TrimSpace(out)
		if code != 0 || !strings.Contains(errs, "kitsoki: forked session "+fork+" from turn "+at+" of bot:fork-2") {
			t.Fatalf("fork at turn %d: exit %d, stdout %q, stderr %q", n, code, out, errs)
		}
		f, code := e.frame(t, ctx, "inspect", fork)
		if code != 0 || f["session"].(map[string]any)["turn"] != float64(n) {
			t.Fatalf("fork at turn %d: inspect: exit %d, %v", n, code, f)
		}
		if f["state"] != atTurn[n]["state"] {
			t.Errorf("fork at turn %d is in %v, the local run was in %v", n, f["state"], atTurn[n]["state"])
		}
		// session_id is the id the session started with: a fork keeps
		// it, as a local fork does.
		lw, fw := worldOf(atTurn[n]), worldOf(f)
		if fw["session_id"] != "bot:fork-2" {
			t.Errorf("fork at turn %d: world.session_id %v, want the session it came from", n, fw["session_id"])
		}
		delete(lw, "session_id")
		delete(fw, "session_id")
		if d := cmp.Diff(lw, fw); d != "" {
			t.Errorf("fork at turn %d: world (-local +fork):\n%s", n, d)
		}
		out, errs, code = e.run(t, ctx, "trace", fork)
		var head map[string]any
		if err := json.Unmarshal([]byte(firstLine(out)), &head); code != 0 || err != nil {
			t.Fatalf("fork at turn %d: trace: exit %d, %v\n%s", n, code, err, errs)
		}
		want := any(float64(n))
		if n == 0 {
			want = nil // forked_at_turn is left out at 0
		}
		if head["forked_from"] != "bot:fork-2" || head["forked_at_turn"] != want {
			t.Errorf("fork at turn %d: header %v", n, head)
		}
		// The fork goes on from its turn.
		next := map[string]any{"greeted": "again", "lobby": "greet name=Bob"}[f["state"].(string)]
		g, code := e.frame(t, ctx, "continue", fork, "--intent", next.(string))
		if code != 0 || g["session"].(map[string]any)["turn"] != float64(n+1) {
			t.Fatalf("fork at turn %d: continue %q: exit %d, %v", n, next, code, g)
		}
		last = fork
	}
	// A fork of that fork, at each of its turns: the one before its fork
	// (its parent's), its fork turn, and one it took after the fork (its
	// trace, which starts at the fork, replayed from where it was forked).
	g, code := e.frame(t, ctx, "inspect", last)
	if code != 0 {
		t.Fatalf("inspect %s: exit %d", last, code)
	}
	atTurn = append(atTurn[:len(inputs)], g) // last's turn 3
	next := map[string]any{"greeted": "again", "lobby": "greet name=Bob"}[g["state"].(string)]
	if _, code := e.frame(t, ctx, "continue", last, "--intent", next.(string)); code != 0 {
		t.Fatalf("continue %s: exit %d", last, code)
	}
	for _, n := range []int64{1, 2, 3} {
		at := strconv.FormatInt(n, 10)
		out, errs, code := e.run(t, ctx, "fork", last, "--at-turn", at)
		fork := strings.TrimSpace(out)
		if code != 0 {
			t.Errorf("fork of a fork at turn %d: exit %d, stderr %q", n, code, errs)
			continue
		}
		f, code := e.frame(t, ctx, "inspect", fork)
		if code != 0 || f["session"].(map[string]any)["turn"] != float64(n) || f["state"] != atTurn[n]["state"] {
			t.Errorf("fork of a fork at turn %d: exit %d, turn %v, state %v, want %v", n, code, f["session"], f["state"], atTurn[n]["state"])
		}
		lw, fw := worldOf(atTurn[n]), worldOf(f)
		delete(lw, "session_id")
		delete(fw, "session_id")
		if d := cmp.Diff(lw, fw); d != "" {
			t.Errorf("fork of a fork at turn %d: world (-want +fork):\n%s", n, d)
		}
	}
	if f, code := e.frame(t, ctx, "inspect", "bot:fork-2"); code != 0 || f["state"] != "greeted" || worldOf(f)["name"] != "Grace" ||
		f["session"].(map[string]any)["turn"] != float64(len(inputs)) {
		t.Errorf("the forked session changed: exit %d, %v", code, f)
	}
	// With the parent deleted, a turn before the fork is refused, naming
	// the parent; a turn after the fork needs only the fork's own trace.
	if _, errs, code := e.run(t, ctx, "delete", "bot:fork-2"); code != 0 {
		t.Fatalf("delete bot:fork-2: exit %d: %s", code, errs)
	}
	_, errs, code := e.run(t, ctx, "fork", last, "--at-turn", "1")
	if want := "at turn 1, which it has from session bot:fork-2 (it was forked from it at turn 2): session bot:fork-2: no such session"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("a fork's turn before its fork, its parent deleted: exit %d, stderr %q, want %q", code, errs, want)
	}
	if _, errs, code := e.run(t, ctx, "fork", last, "--at-turn", "3"); code != 0 {
		t.Errorf("a fork's turn after its fork, its parent deleted: exit %d, stderr %q", code, errs)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestSessionPruneOnTheCluster prunes a namespace's sessions with
// `kitsoki session prune --temporal --older-than D`: a session's age is
// its last turn (its close once closed), which reading it does not move.
func TestSessionPruneOnTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := newAPIEnv(t, pruneNamespace)
	for _, key := range []string{"bot:prune-done", "bot:prune-idle"} {
		if _, code := e.frame(t, ctx, "create", "app.yaml", "--key", key); code != 0 {
			t.Fatalf("create %s: exit %d", key, code)
		}
		if _, code := e.frame(t, ctx, "continue", key, "--intent", "greet name=Ada"); code != 0 {
			t.Fatalf("continue %s: exit %d", key, code)
		}
	}
	if f, code := e.frame(t, ctx, "continue", "bot:prune-done", "--intent", "bye"); code != 0 || f["done"] != true {
		t.Fatalf("bye: exit %d, %v", code, f)
	}

	// Reading a session does not make it younger.
	cl, err := cluster.Dial(ctx, cluster.ClientOptions{HostPort: server.Addr, Namespace: pruneNamespace})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	before, err := cl.Describe(ctx, "bot:prune-idle")
	if err != nil {
		t.Fatal(err)
	}
	if _, code := e.frame(t, ctx, "inspect", "bot:prune-idle"); code != 0 {
		t.Fatalf("inspect: exit %d", code)
	}
	after, err := cl.Describe(ctx, "bot:prune-idle")
	if err != nil {
		t.Fatal(err)
	}
	if !after.LastActivity().Equal(before.LastActivity()) || before.LastActivity().IsZero() {
		t.Errorf("an inspect moved the last activity from %v to %v", before.LastActivity(), after.LastActivity())
	}

	list := func() []string {
		t.Helper()
		all, err := cl.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, si := range all {
			ids = append(ids, si.ID)
		}
		return ids
	}
	both := "bot:prune-done\nbot:prune-idle\n"
	sorted := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		if len(lines) == 2 && lines[0] > lines[1] {
			lines[0], lines[1] = lines[1], lines[0]
		}
		return strings.Join(lines, "\n") + "\n"
	}
	if out, errs, code := e.run(t, ctx, "prune", "--older-than", "24h"); code != 0 || out != "" ||
		!strings.Contains(errs, "kitsoki: pruned 0 session(s) idle for more than 24h0m0s from namespace "+pruneNamespace) {
		t.Fatalf("prune of nothing old: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// Both turns ended before this command started: older than 1ms.
	if out, errs, code := e.run(t, ctx, "prune", "--older-than", "1ms", "--dry-run"); code != 0 || sorted(out) != both {
		t.Fatalf("dry run: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if ids := list(); len(ids) != 2 {
		t.Fatalf("a dry run deleted: %v", ids)
	}
	if out, errs, code := e.run(t, ctx, "prune", "--older-than", "1ms"); code != 0 || sorted(out) != both ||
		!strings.Contains(errs, "kitsoki: pruned 2 session(s)") {
		t.Fatalf("prune: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// The server deletes in the background: the sessions go.
	for len(list()) > 0 {
		if ctx.Err() != nil {
			t.Fatalf("pruned sessions are still listed: %v", list())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, errs, code := e.run(t, ctx, "prune", "--older-than", "0s"); code != 2 || !strings.Contains(errs, "give --older-than DURATION") {
		t.Errorf("a zero duration: exit %d, %q", code, errs)
	}
}

// TestMCPSessionToolsOnTheCluster drives `kitsoki mcp serve --surface
// external --temporal` with mcp-go's client over stdio: new, submit,
// continue, inspect, render, trace, list, fork and delete reach the
// session on the cluster.
func TestMCPSessionToolsOnTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := newAPIEnv(t, "")
	args := append([]string{"mcp", "serve", "--surface", "external", "--stdio", "--root", e.story}, e.flags...)
	var stderr testkit.SyncBuffer // the server's log
	c, err := client.NewStdioMCPClientWithOptions(kitsoki(t), []string{"KITSOKI_SESSIONS_DIR=" + t.TempDir()}, args,
		transport.WithCommandStderrWriter(&stderr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "kitsoki-test", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, a map[string]any) (string, bool) {
		t.Helper()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: a}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	frame := func(tool string, a map[string]any) map[string]any {
		t.Helper()
		text, isErr := call(tool, a)
		var f map[string]any
		if isErr || json.Unmarshal([]byte(text), &f) != nil {
			t.Fatalf("%s %v: error %v: %s", tool, a, isErr, text)
		}
		return f
	}
	if f := frame("session_new_kitsoki", map[string]any{"story": "app.yaml", "key": "mcp:cluster-1"}); f["state"] != "lobby" || f["outcome"] != "started" {
		t.Fatalf("new: %v", f)
	}
	f := frame("session_submit_kitsoki", map[string]any{"session": "mcp:cluster-1", "intent": "greet", "slots": map[string]any{"name": "Ada"}})
	if f["state"] != "greeted" || worldOf(f)["name"] != "Ada" {
		t.Fatalf("submit: %v", f)
	}
	turn := f["session"].(map[string]any)["turn"]
	if f := frame("session_submit_kitsoki", map[string]any{"session": "mcp:cluster-1", "line": "greet name=Bob"}); f["outcome"] != "rejected" || f["state"] != "greeted" {
		t.Errorf("a rejected submit: %v", f)
	}
	if f := frame("session_continue_kitsoki", map[string]any{"session": "mcp:cluster-1"}); f["state"] != "greeted" || f["outcome"] != "resumed" {
		t.Errorf("continue: %v", f)
	}
	if f := frame("session_inspect_kitsoki", map[string]any{"session": "mcp:cluster-1"}); f["state"] != "greeted" || f["session"].(map[string]any)["key"] != "mcp:cluster-1" {
		t.Errorf("inspect: %v", f)
	}
	if text, isErr := call("session_render_kitsoki", map[string]any{"session": "mcp:cluster-1"}); isErr || !strings.Contains(text, "Ada was greeted (casual).") {
		t.Errorf("render: %v %q", isErr, text)
	}
	if text, isErr := call("session_trace_kitsoki", map[string]any{"session": "mcp:cluster-1"}); isErr || !strings.Contains(firstLine(text), `"session.header"`) || !strings.Contains(text, `"greet"`) {
		t.Errorf("trace: %v %q", isErr, text)
	}
	if text, isErr := call("session_list_kitsoki", nil); isErr || !strings.Contains(text, `"mcp:cluster-1"`) {
		t.Errorf("list: %v %q", isErr, text)
	}
	checkClusterAudits(t, ctx, e, "mcp:cluster-1")
	fork := frame("session_fork_kitsoki", map[string]any{"session": "mcp:cluster-1", "at_turn": turn})
	if fork["forked_from"] != "mcp:cluster-1" || fork["state"] != "greeted" {
		t.Fatalf("fork: %v", fork)
	}
	if f := frame("session_submit_kitsoki", map[string]any{"session": fork["id"], "raw": "again"}); f["state"] != "lobby" {
		t.Errorf("submit to the fork: %v", f)
	}
	// The fork finishes and its workflow closes: a submit to it is the
	// tool's error, and since a closed history takes no audit record, the
	// server's log has the call, as a warning.
	if f := frame("session_submit_kitsoki", map[string]any{"session": fork["id"], "raw": "bye"}); f["state"] != "farewell" {
		t.Errorf("bye in the fork: %v", f)
	}
	text, isErr := call("session_submit_kitsoki", map[string]any{"session": fork["id"], "raw": "again"})
	if want := "session " + fork["id"].(string) + " finished in state \"farewell\""; !isErr || !strings.Contains(text, want) {
		t.Errorf("a submit to a finished session: error %v, %q, want %q", isErr, text, want)
	}
	// The server writes the line before it answers; the client copies its
	// stderr on its own goroutine, so the line may come a moment later.
	const refused = "mcp session tool refused: the session's workflow has closed"
	for !strings.Contains(stderr.String(), refused) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{"mcp session tool refused: the session's workflow has closed, so the call is not in its trace",
		"tool=session_submit_kitsoki", "client=stdio", "session=" + fork["id"].(string)} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the server's log has no %q:\n%s", want, stderr.String())
		}
	}
	if text, isErr := call("session_fork_kitsoki", map[string]any{"session": "mcp:nope", "at_turn": 0}); !isErr || !strings.Contains(text, "session mcp:nope: no such session on the cluster") {
		t.Errorf("fork of an unknown key: %v %q", isErr, text)
	}
	for _, id := range []string{"mcp:cluster-1", fork["id"].(string)} {
		if f := frame("session_delete_kitsoki", map[string]any{"session": id}); f["deleted"] != id {
			t.Errorf("delete %s: %v", id, f)
		}
	}
}

// apiCall is what a test compares of a kitsoki.api.call event.
type apiCall struct {
	Turn    int64
	State   string
	Payload map[string]any
}

// checkClusterAudits reads the session's trace through kitsoki session
// trace --temporal: the calls a local session records (new, submit, the
// rejected submit, continue, inspect, render; not trace, list, fork or
// delete) are there as kitsoki.api.call events, with the fields a local
// trace has and none of the calls' arguments.
func checkClusterAudits(t *testing.T, ctx context.Context, e apiEnv, ref string) {
	t.Helper()
	out, errs, code := e.run(t, ctx, "trace", ref)
	if code != 0 {
		t.Fatalf("trace: exit %d: %s", code, errs)
	}
	var got []apiCall
	for line := range strings.Lines(out) {
		var ev struct {
			Kind      string         `json:"kind"`
			Turn      int64          `json:"turn"`
			StatePath string         `json:"state_path"`
			Payload   map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("trace line %q: %v", line, err)
		}
		if ev.Kind == cluster.KindAPICall {
			got = append(got, apiCall{Turn: ev.Turn, State: ev.StatePath, Payload: ev.Payload})
			if strings.Contains(line, "Ada") || strings.Contains(line, "Bob") {
				t.Errorf("an audit event holds a call's argument: %s", line)
			}
		}
	}
	// On stdio the MCP client's session id is "stdio", as a local trace has it.
	mcp := func(tool string) map[string]any {
		return map[string]any{"surface": "mcp", "tool": tool, "client": "stdio"}
	}
	want := []apiCall{
		{0, "lobby", mcp("session_new_kitsoki")},
		{0, "lobby", mcp("session_submit_kitsoki")},
		{1, "greeted", mcp("session_submit_kitsoki")},
		{1, "greeted", mcp("session_continue_kitsoki")},
		{1, "greeted", mcp("session_inspect_kitsoki")},
		{1, "greeted", mcp("session_render_kitsoki")},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the session's audit events (-want +got):\n%s\ntrace:\n%s", d, out)
	}
}

// TestResumeOnTheCluster resumes a cluster session by its key with the
// Go API (kitsoki.Resume with cluster.Dial's connection) and takes turns
// in it; the options that belong to a local run are refused.
func TestResumeOnTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := newAPIEnv(t, "")
	if _, code := e.frame(t, ctx, "create", "app.yaml", "--key", "go:cluster-1"); code != 0 {
		t.Fatalf("create: exit %d", code)
	}
	c, err := kcluster.Dial(ctx, kcluster.Options{HostPort: server.Addr, TaskQueue: "q-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ks.Resume(ctx, "go:cluster-1", ks.WithCluster(c))
	if err != nil {
		t.Fatal(err)
	}
	if s.ID() != "go:cluster-1" || s.Key() != "go:cluster-1" || s.State() != "lobby" {
		t.Fatalf("resumed: id %q key %q state %q", s.ID(), s.Key(), s.State())
	}
	out, err := s.Do(ctx, "greet name=Ada style=formal")
	if err != nil || out.State != "greeted" {
		t.Fatalf("Do: %v, %+v", err, out)
	}
	if w := s.World(); w["name"] != "Ada" {
		t.Errorf("world: %v", w)
	}
	if v, err := s.View(); err != nil || v != "Ada was greeted (formal)." {
		t.Errorf("view: %q, %v", v, err)
	}
	if _, err := s.Do(ctx, "greet name=Bob"); err == nil {
		t.Errorf("a greet in greeted was taken")
	} else if rej, ok := errors.AsType[*ks.Rejection](err); !ok || rej.Code != "INTENT_NOT_ALLOWED_IN_STATE" {
		t.Errorf("a greet in greeted: %T %v", err, err)
	}
	if tr, err := s.Trace(); err != nil || !strings.Contains(string(tr), `"greet"`) {
		t.Errorf("trace: %v %.200s", err, tr)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Another process (here: another Resume) goes on where it stopped.
	s, err = ks.Resume(ctx, "go:cluster-1", ks.WithCluster(c))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, "bye"); err != nil {
		t.Fatal(err)
	}
	if done, _ := s.Done(); !done {
		t.Errorf("not done after bye in %q", s.State())
	}
	s.Close()

	for _, tc := range []struct {
		ref  string
		opts []ks.Option
		want string
	}{
		{"go:nope", nil, "kitsoki.Resume: session go:nope: no such session on the cluster"},
		{"go:cluster-1", nil, "session go:cluster-1 finished in state \"farewell\""},
		{"go:cluster-1", []ks.Option{ks.WithSessionsDir(t.TempDir())}, "kitsoki.Resume: WithSessionsDir does not apply with WithCluster"},
	} {
		_, err := ks.Resume(ctx, tc.ref, append(tc.opts, ks.WithCluster(c))...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resume %s: %v, want %q", tc.ref, err, tc.want)
		}
	}
}
