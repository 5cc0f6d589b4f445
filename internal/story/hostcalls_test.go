package story

import (
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
		`errors.yaml:10:17: states.a.on_enter[2].invoke: state "a": on_enter invoke "host.ide.open_file": kitsoki does not provide host.ide (it needs the IDE link); serve it from a host plugin or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
		`errors.yaml:12:17: states.a.on_enter[3].invoke: state "a": on_enter invoke "host.jira": kitsoki does not provide host.jira (it needs Jira); serve it from a host plugin or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
		`errors.yaml:14:36: states.a.on_enter[4].with.bogus: host.artifacts_dir has no field "bogus" (fields: thread, body, title, phase_id, author, mode, artifacts_root, src_path, kind, mime, label; see kitsoki hosts)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

func TestHostRunEnvSecrets(t *testing.T) {
	st, err := Load("testdata/hostcalls/ok.yaml", WithLookupEnv(mapEnv(map[string]string{"HOSTCALLS_TOKEN": "s3cret-value"})))
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
