package story

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostCallErrors(t *testing.T) {
	got := loadErr(t, "testdata/hostcalls/errors.yaml", nil)
	want := []string{
		`errors.yaml:7:27: states.a.on_enter[0].with.tiemout: host.run has no field "tiemout" (did you mean "timeout"?) (fields: cmd, args, cwd, env, fail_on_error, timeout, max_output; see kitsoki hosts)`,
		`errors.yaml:7:53: states.a.on_enter[0].with.env.TOKEN: env var NOT_SET referenced in with.env.TOKEN not set: export it before the run`,
		`errors.yaml:7:72: states.a.on_enter[0].with.env.BAD: invalid variable name "9x" in ${...} reference in with.env.BAD`,
		`errors.yaml:9:15: states.a.on_enter[1].with: host.run needs with.cmd: the program (argv mode) or the bash command (shell mode)`,
		`errors.yaml:10:17: states.a.on_enter[2].invoke: state "a": on_enter invoke "host.video.frame": kitsoki does not provide host.video (it needs ffmpeg); serve it from a host plugin or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
		`errors.yaml:12:17: states.a.on_enter[3].invoke: state "a": on_enter invoke "host.jira": kitsoki does not provide host.jira (it needs Jira); serve it from a host plugin or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
		`errors.yaml:14:36: states.a.on_enter[4].with.bogus: host.artifacts_dir has no field "bogus" (fields: thread, body, title, phase_id, author, mode, artifacts_root, workdir, src_path, kind, mime, label; see kitsoki hosts)`,
		"errors.yaml:16:15: states.a.on_enter[5].with: host.local_files.ticket.comment needs with.body: the comment's Markdown text",
		`errors.yaml:16:27: states.a.on_enter[5].with.thred: host.local_files.ticket.comment has no field "thred" (did you mean "thread"?) (fields: id, body, thread, author, root, repo; see kitsoki hosts)`,
		"errors.yaml:18:15: states.a.on_enter[6].with: host.local_files.ticket needs with.op: search, get, comment, transition or list_mine",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

func TestHostRunEnvSecrets(t *testing.T) {
	st, err := Load("testdata/hostcalls/ok.yaml", WithLookupEnv(mapEnv(map[string]string{"HOSTCALLS_TOKEN": "s3cret-value"})), WithProvidedHandlers(fixtureHandlers...))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if diff := cmp.Diff([]string{"s3cret-value"}, st.Secrets); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	with, err := st.States["a"].OnEnter[0].Invoke.With.Eval(map[string]any{"world": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	env := with.(map[string]any)["env"]
	if diff := cmp.Diff(map[string]any{"TOKEN": "tok-s3cret-value", "PLAIN": "p"}, env); diff != "" {
		t.Errorf("rendered env (-want +got):\n%s", diff)
	}
}

func TestPluginHandlersAreNotRefused(t *testing.T) {
	l := &loader{st: &Story{HostPlugins: map[string]*HostPlugin{"host.jira": {}, "host.ide.open_file": {}}}}
	for name, want := range map[string]bool{
		"host.jira": true, "host.jira.get": true, "host.jira_comment": false,
		"host.ide.open_file": true, "host.ide.get_diagnostics": false,
	} {
		if got := l.pluginProvides(name); got != want {
			t.Errorf("pluginProvides(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestGitHandlerCallErrors: the with: keys of host.git_worktree (by op,
// also through a literal with.op), host.diff.open and host.transport.post
// are checked at load.
func TestGitHandlerCallErrors(t *testing.T) {
	got := loadErr(t, "testdata/hostcalls/gitwt.yaml", nil)
	want := []string{
		`gitwt.yaml:7:15: states.a.on_enter[0].with: host.git_worktree.create needs with.name: the branch: created from base, or checked out when it exists`,
		`gitwt.yaml:7:23: states.a.on_enter[0].with.workdir: host.git_worktree.create has no field "workdir" (fields: name, id, base, session_id; see kitsoki hosts)`,
		`gitwt.yaml:9:37: states.a.on_enter[1].with.candidates: host.git_worktree has no field "candidates" (fields: op, name, id, base, session_id; see kitsoki hosts)`,
		`gitwt.yaml:11:20: states.a.on_enter[2].with.op: host.git_worktree has no op "remove" (ops: cleanup_apply, cleanup_scan, create, get, list, sync; see kitsoki hosts)`,
		`gitwt.yaml:13:15: states.a.on_enter[3].with: host.git_worktree needs with.op: list, get, create, sync, cleanup_scan or cleanup_apply`,
		`gitwt.yaml:17:16: states.a.on_enter[5].with.mode: host.diff.open has no field "mode" (fields: paths, base, path, new_text, title; see kitsoki hosts)`,
		`gitwt.yaml:19:15: states.a.on_enter[6].with: host.transport.post needs with.body: the message; maps and lists are written as indented JSON`,
		`gitwt.yaml:19:27: states.a.on_enter[6].with.channel: host.transport.post has no field "channel" (fields: body, transport, thread, title, phase_id, bot_marker; see kitsoki hosts)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestUnprovidedHandlers: an invoke of a handler nothing provides is
// refused at load, interfaces by their default: handler, unless the caller
// provides the name or the story is loaded for flows.
func TestUnprovidedHandlers(t *testing.T) {
	const file = "testdata/provided/errors.yaml"
	want := []string{
		`errors.yaml:18:17: states.a.on_enter[0].invoke: state "a": on_enter invoke "host.frobnicate": no handler provides host.frobnicate: it is not built in, no host plugin serves it and it is no interface's; declare a host plugin that serves it (host_plugins:) or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
		`errors.yaml:19:17: states.a.on_enter[1].invoke: state "a": on_enter invoke "host.rn": no handler provides host.rn (did you mean "host.run"?): it is not built in, no host plugin serves it and it is no interface's; declare a host plugin that serves it (host_plugins:) or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
		`errors.yaml:20:17: states.a.on_enter[2].invoke: state "a": on_enter invoke "iface.artifact.create": interface "artifact" is bound to host.cypilot_artifacts (host_interfaces.artifact.default), which kitsoki does not provide (it needs cypilot); serve host.cypilot_artifacts from a host plugin, bind the interface to a handler kitsoki provides, or remove the call`,
		`errors.yaml:21:17: states.a.on_enter[3].invoke: state "a": on_enter invoke "iface.build.run": interface "build" is bound to host.jenkins (host_interfaces.build.default), which kitsoki does not provide (it needs Jenkins); serve host.jenkins from a host plugin, bind the interface to a handler kitsoki provides, or remove the call`,
		`errors.yaml:24:17: states.a.on_enter[5].invoke: state "a": on_enter invoke "iface.reporter.say": interface "reporter" is bound to host.trnasport.post (host_interfaces.reporter.default), which no handler provides (did you mean "host.transport.post"?); serve it from a host plugin, bind the interface to a handler kitsoki provides, or remove the call`,
		`errors.yaml:25:17: states.a.on_enter[6].invoke: state "a": on_enter invoke "iface.bare.go": interface "bare" has no default: handler (host_interfaces.bare.default); bind it to a handler that serves it, e.g. a host plugin's, or remove the call`,
		`errors.yaml:26:17: states.a.on_enter[7].invoke: state "a": on_enter invoke "iface.nope.go": no host_interfaces: entry "nope"; declare the interface with a default: handler, or remove the call`,
		`errors.yaml:29:17: states.a.on_enter[10].invoke: state "a": on_enter invoke "host.slidey.render": kitsoki does not provide host.slidey (it needs slidey); serve it from a host plugin or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
	}
	_, err := Load(file)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load: %v, want a *LoadError", err)
	}
	if diff := cmp.Diff(want, lines(le.Diagnostics)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"flows stub handlers", []Option{WithStubbedHosts()}},
		{"the caller provides them", []Option{WithProvidedHandlers("host.frobnicate", "host.rn", "iface.artifact.create", "iface.build.run",
			"iface.reporter.say", "iface.bare.go", "iface.nope.go", "host.slidey.render")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Load(file, tc.opts...)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			st.Close()
		})
	}
}
