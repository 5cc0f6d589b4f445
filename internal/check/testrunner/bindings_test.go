package testrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// bindingsStory copies testdata/bindings to a temporary directory (its own
// workspace, so artifacts land there) and returns the copy's app.yaml.
func bindingsStory(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bindings")
	if err := os.CopyFS(dir, os.DirFS("testdata/bindings")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "app.yaml")
}

// runBindings runs the fixtures matching glob (relative to the copied
// story's directory) and returns the report as `kitsoki test flows`
// prints it.
func runBindings(t *testing.T, app, glob string) ([]*FlowResult, string) {
	t.Helper()
	rep := runFixtures(t, app, filepath.Join(filepath.Dir(app), glob))
	return rep.Results, report(rep.Results, false)
}

// A flow binding host.run runs the command for real: its output is bound
// into the world, a templated argument stays one argument, and the call
// nothing binds is still dropped.
func TestHostBindingsRunsHostRun(t *testing.T) {
	app := bindingsStory(t)
	res, out := runBindings(t, app, "flows/run.yaml")
	if want := "PASS  run.yaml (1 host call dropped: no stubs)\n"; out != want {
		t.Errorf("report:\n%s\nwant:\n%s", out, want)
	}
	if len(res) != 1 || !res[0].Passed {
		t.Fatalf("the flow failed: %s", out)
	}
}

// Without host_bindings (and no stubs) the same calls are dropped: the
// binding is what makes host.run real.
func TestWithoutHostBindingsCallsAreDropped(t *testing.T) {
	app := bindingsStory(t)
	_, out := runBindings(t, app, "flows/unbound.yaml")
	if want := "PASS  unbound.yaml (2 host calls dropped: no stubs)\n"; out != want {
		t.Errorf("report:\n%s\nwant:\n%s", out, want)
	}
}

// A flow binding host.artifacts_dir writes and lists real artifacts, and
// a bound interface (transport) routes iface.transport.post to
// host.artifacts_dir.post.
func TestHostBindingsArtifacts(t *testing.T) {
	app := bindingsStory(t)
	res, out := runBindings(t, app, "flows/artifacts.yaml")
	if want := "PASS  artifacts.yaml\n"; out != want {
		t.Fatalf("report:\n%s\nwant:\n%s", out, want)
	}
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	dir := filepath.Join(filepath.Dir(app), ".kitsoki", "artifacts", "flow")
	got := map[string]string{}
	for _, name := range []string{"report.md", "posted.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got[name] = string(b)
	}
	if !strings.Contains(got["report.md"], "### Report") || !strings.Contains(got["report.md"], "hello") {
		t.Errorf("report.md = %q, want the title and the body", got["report.md"])
	}
	if !strings.Contains(got["posted.txt"], "via the interface") {
		t.Errorf("posted.txt = %q, want the body posted through iface.transport", got["posted.txt"])
	}
	if _, err := os.Stat(filepath.Join(dir, "transcript.md")); !os.IsNotExist(err) {
		t.Errorf("transcript.md exists (%v): the binding, not the story's default host.append_to_file, should have answered", err)
	}
}

// Every malformed host_bindings value is refused when the fixture is
// parsed, at the position of what is wrong.
func TestHostBindingsParseErrors(t *testing.T) {
	const head = "test_kind: flow\napp: app.yaml\n"
	tests := []struct{ name, body, want string }{
		{"list", "host_bindings: [host.run]\n",
			`f.yaml:3:16: host_bindings must be a mapping of {interface or handler: handler}, e.g. host_bindings: {host.run: host.run} or {transport: host.artifacts_dir}; got a list`},
		{"scalar", "host_bindings: host.run\n",
			`f.yaml:3:16: host_bindings must be a mapping of {interface or handler: handler}, e.g. host_bindings: {host.run: host.run} or {transport: host.artifacts_dir}; got a scalar`},
		{"empty value", "host_bindings:\n  host.run:\n",
			`f.yaml:4:12: host_bindings["host.run"]: the value must be a handler name such as host.artifacts_dir, got null`},
		{"mapping value", "host_bindings:\n  host.run: {timeout: 1s}\n",
			`f.yaml:4:13: host_bindings["host.run"]: the value must be a handler name such as host.artifacts_dir, got a mapping`},
		{"not a handler name", "host_bindings:\n  transport: artifacts\n",
			`f.yaml:4:14: host_bindings["transport"]: "artifacts" is not a handler name: write a dotted invoke name such as host.artifacts_dir`},
		{"interface as value", "host_bindings:\n  transport: iface.transport\n",
			`f.yaml:4:14: host_bindings["transport"]: "iface.transport" is an interface, not a handler: bind the interface to the handler that implements it`},
		{"handler to another", "host_bindings:\n  host.append_to_file: host.artifacts_dir\n",
			`f.yaml:4:24: host_bindings["host.append_to_file"]: a handler can only be bound to itself (host.append_to_file: host.append_to_file), which runs the real handler in this flow; to route calls to host.artifacts_dir, bind an interface (transport: host.artifacts_dir)`},
		{"iface key", "host_bindings:\n  iface.transport: host.artifacts_dir\n",
			`f.yaml:4:3: host_bindings["iface.transport"]: key an interface by its name without "iface.": transport: host.artifacts_dir`},
		{"bad key", "host_bindings:\n  \"a b\": host.run\n",
			`f.yaml:4:3: host_bindings["a b"]: "a b" is neither a handler name (host.run) nor an interface name (transport)`},
		{"duplicate", "host_bindings:\n  host.run: host.run\n  host.run: host.run\n",
			`f.yaml:5:3: host_bindings["host.run"]: key appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFixtures([]byte(head+tt.body), "f.yaml", "")
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// A well-formed binding nothing in the flow can honour is a setup error
// of the fixture.
func TestHostBindingsSetupErrors(t *testing.T) {
	app := bindingsStory(t)
	dir := filepath.Dir(app)
	tests := []struct{ name, body, want string }{
		{"unknown handler", "host_bindings:\n  host.probe: host.probe\n",
			`:4:3: host_bindings["host.probe"]: nothing in this flow answers "host.probe": it is not a handler kitsoki provides (kitsoki hosts lists them) and no host_handlers stub or host_cassette episode answers it`},
		{"refused handler", "host_bindings:\n  transport: host.jira\n",
			`:4:3: host_bindings["transport"]: kitsoki does not provide host.jira (it needs Jira), so nothing would answer "host.jira" in this flow: stub it in host_handlers`},
		{"unused interface", "host_bindings:\n  ticket: host.artifacts_dir\n",
			`:4:3: host_bindings["ticket"]: the story declares no host interface "ticket" (host_interfaces: transport) and invokes no iface.ticket.<op>, so this binding would route nothing`},
		{"bound and stubbed", "host_bindings:\n  host.run: host.run\nhost_handlers:\n  host.run: {data: {ok: true}}\n",
			`:4:3: host_bindings["host.run"]: host_handlers["host.run"] also stubs it, so the real handler would never answer: drop the binding or the stub`},
		{"agent verb", "host_bindings:\n  host.agent.task: host.agent.task\n",
			`:4:3: host_bindings["host.agent.task"]: agents do not run in flows (no transport is installed): answer host.agent.task with a host_handlers stub or a host_cassette instead`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "flows", "bad.yaml")
			fxs, err := ParseFixtures([]byte("test_kind: flow\napp: ../app.yaml\n"+tt.body), file, app)
			if err != nil {
				t.Fatal(err)
			}
			r := NewRunner(WithFlowGetenv(testkit.NoEnv))
			t.Cleanup(func() { r.Close() })
			_, err = r.Prepare(fxs[0])
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(file+tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// An interface bound to a stubbed handler is answered by the stub, under
// the handler's name (as Kitsoki's corpus rebinds iface.ticket to a
// stubbed host.gh.ticket).
func TestHostBindingsInterfaceToStub(t *testing.T) {
	app := bindingsStory(t)
	file := filepath.Join(filepath.Dir(app), "flows", "stubbed.yaml")
	body := `test_kind: flow
app: ../app.yaml
host_bindings:
  transport: host.chat
host_handlers:
  host.chat:
    by_op:
      post: {data: {path: "chat#1"}}
turns:
  - intent: post
    expect_world: {posted: "chat#1"}
expect_no_errors: true
`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out := runBindings(t, app, "flows/stubbed.yaml")
	if want := "PASS  stubbed.yaml\n"; out != want {
		t.Errorf("report:\n%s\nwant:\n%s", out, want)
	}
}

// An interface bound to a handler the cassette answers is answered by the
// cassette's episodes for that handler.
func TestHostBindingsInterfaceToCassette(t *testing.T) {
	app := bindingsStory(t)
	dir := filepath.Join(filepath.Dir(app), "flows")
	cassette := `kind: host_cassette
episodes:
  - id: chat_post
    match: {handler: host.chat, thread: posted.txt}
    response: {data: {path: "chat#7"}}
`
	flow := `test_kind: flow
app: ../app.yaml
host_cassette: chat.cassette.yaml
host_bindings:
  transport: host.chat
turns:
  - intent: post
    expect_world: {posted: "chat#7"}
expect_no_errors: true
strict_cassette_coverage: true
`
	for name, body := range map[string]string{"chat.cassette.yaml": cassette, "chat.yaml": flow} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, out := runBindings(t, app, "flows/chat.yaml")
	if want := "PASS  chat.yaml\n"; out != want {
		t.Errorf("report:\n%s\nwant:\n%s", out, want)
	}
}

// Without a binding an interface goes to the default: its story declares
// (host_interfaces), here the real host.append_to_file; the flow's binding
// (artifacts.yaml) replaces it.
func TestInterfaceDefaultInAFlow(t *testing.T) {
	app := bindingsStory(t)
	_, out := runBindings(t, app, "flows/default.yaml")
	if want := "PASS  default.yaml\n"; out != want {
		t.Fatalf("report:\n%s\nwant:\n%s", out, want)
	}
	dir := filepath.Join(filepath.Dir(app), ".kitsoki", "artifacts", "flow")
	b, err := os.ReadFile(filepath.Join(dir, "transcript.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<!-- thread: posted.txt -->") || !strings.Contains(string(b), "via the interface") {
		t.Errorf("transcript.md = %q, want the posted chunk under its thread", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "posted.txt")); !os.IsNotExist(err) {
		t.Errorf("posted.txt exists (%v): the default, not host.artifacts_dir, should have answered", err)
	}
}

// A handler bound next to a host_cassette whose episodes answer it: the
// episodes answer first, the real handler answers what they miss (Kitsoki's
// fixtures bind ifaces to real handlers this way). Without the binding the
// same call is a cassette miss.
func TestHostBindingsCassetteFirstThenRealHandler(t *testing.T) {
	cassette := `kind: host_cassette
episodes:
  - id: run_once
    match: {handler: host.run}
    response: {data: {stdout: "recorded", exit_code: 0, stdout_json: {n: 1}}}
  - id: probe_any
    match: {handler: host.probe}
    response: {data: {answer: "probed"}}
    replay: any
`
	flow := `test_kind: flow
app: ../app.yaml
host_cassette: run.cassette.yaml
%s
turns:
  - intent: {name: greet, slots: {text: "a"}}
    expect_world: {out: "recorded", n: 1, probed: "probed"}
  - intent: {name: greet, slots: {text: "b"}}
    expect_world: {out: "b\n{\"n\": 3}\n", n: 3, code: 0}
`
	tests := []struct {
		name, bindings string
		want           []string // lines the report starts with, in order
	}{
		{"bound", "host_bindings:\n  host.run: host.run", []string{"PASS  fallback.yaml"}},
		{"unbound", "", []string{"FAIL  fallback.yaml", "  FAIL  turn 2 → idle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := bindingsStory(t)
			dir := filepath.Join(filepath.Dir(app), "flows")
			for name, body := range map[string]string{"run.cassette.yaml": cassette, "fallback.yaml": fmt.Sprintf(flow, tt.bindings)} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, out := runBindings(t, app, "flows/fallback.yaml")
			lines := strings.Split(out, "\n")
			if len(lines) < len(tt.want) {
				t.Fatalf("report:\n%s", out)
			}
			if diff := cmp.Diff(tt.want, lines[:len(tt.want)]); diff != "" {
				t.Errorf("report (-want +got):\n%s\n%s", diff, out)
			}
			if tt.bindings == "" && !strings.Contains(out, "cassette miss") {
				t.Errorf("report does not name the cassette miss:\n%s", out)
			}
		})
	}
}

// A host_handlers stub or a host_cassette episode for a handler answers
// every op under it, also the ops a built-in registers one by one
// (host.git_worktree.create): the real one, outside a git work tree here,
// would fail the call.
func TestStubAndCassetteAnswerABuiltinsOps(t *testing.T) {
	const app = `app: {id: ops}
world:
  log: {type: string, default: ""}
intents: {go: {}}
root: idle
states:
  idle:
    on:
      go:
        - target: .
          effects:
            - invoke: host.git_worktree.create
              with: {id: ws-1, name: fix/x}
              bind: {log: log}
`
	tests := []struct{ name, answer string }{
		{"stub", "host_handlers:\n  host.git_worktree: {data: {log: synced}}\n"},
		{"cassette", "host_cassette: c.yaml\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.Tree(t, map[string]string{
				".kitsoki-root": "",
				"app.yaml":      app,
				"flows/c.yaml":  "kind: host_cassette\nepisodes:\n  - id: wt\n    match: {handler: host.git_worktree}\n    response: {data: {log: synced}}\n    replay: any\n",
				"flows/f.yaml":  "test_kind: flow\napp: ../app.yaml\n" + tt.answer + "turns:\n  - intent: go\n    expect_world: {log: synced}\nexpect_no_errors: true\n",
			})
			rep := runFixtures(t, filepath.Join(dir, "app.yaml"), filepath.Join(dir, "flows", "f.yaml"))
			if got := report(rep.Results, false); got != "PASS  f.yaml\n" {
				t.Errorf("report:\n%s", got)
			}
		})
	}
}

// expect_host_calls and expect_no_host_calls match an interface call by
// the name the story invoked and by the handler it was routed to: the
// flow's binding, else the story's default.
func TestHostCallExpectationsSeeTheRoutedHandler(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"bound: the binding's handler", `host_bindings:
  transport: host.chat
host_handlers:
  host.chat: {data: {path: "chat#1"}}
turns:
  - intent: post
    expect_host_calls: [{handler: host.chat.post, times: 1}, {handler: iface.transport.post, times: 1}]
    expect_no_host_calls: [host.append_to_file]
`, "PASS  e.yaml\n"},
		{"unbound: the story's default", `host_handlers:
  host.append_to_file: {data: {path: "t.md"}}
turns:
  - intent: post
    expect_host_calls: [{handler: host.append_to_file, args: {thread: posted.txt}}]
    expect_no_host_calls: [host.chat]
`, "PASS  e.yaml\n"},
		{"a handler it was not routed to", `host_handlers:
  host.append_to_file: {data: {path: "t.md"}}
turns:
  - intent: post
    expect_host_calls: [{handler: host.chat.post}]
`, "FAIL  e.yaml\n  FAIL  turn 1 → idle\n  ✗ expect_host_calls[0]: host.chat.post was not called, want at least once [iface.transport.post]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := bindingsStory(t)
			file := filepath.Join(filepath.Dir(app), "flows", "e.yaml")
			if err := os.WriteFile(file, []byte("test_kind: flow\napp: ../app.yaml\n"+tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, out := runBindings(t, app, "flows/e.yaml")
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}
