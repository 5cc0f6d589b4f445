package starlark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An inspect cassette answers ctx.probe by the probe's name, whatever its
// arguments; a probe it does not hold is an error naming what it holds.
func TestInspectCassetteAnswersProbes(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "p.inspect.yaml")
	os.WriteFile(path, []byte("kind: inspect_cassette\ninteractions:\n  - op: probe\n    target: gh.issue.list\n    exit: 0\n    out: '[{\"number\": 1}]'\n"), 0o644)
	c, err := LoadInspectCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	s := f.script("p", "def main(ctx):\n    r = ctx.probe('gh.issue.list', ['any/repo'])\n    return {'exit': r['exit'], 'n': len(json.decode(r['out']))}\n", "")
	data, e := outcome(t, New(f.st, Options{Probe: c}), call(s, nil, nil))
	if d := cmp.Diff(map[string]any{"exit": int64(0), "n": int64(1)}, data); e != "" || d != "" {
		t.Errorf("probe: %q (-want +got):\n%s", e, d)
	}
	s2 := f.script("q", "def main(ctx):\n    return {'r': ctx.probe('git.status')}\n", "")
	if _, e := outcome(t, New(f.st, Options{Probe: c}), call(s2, nil, nil)); !strings.Contains(e, `ctx.probe("git.status"): the inspect cassette `+path+` has no probe "git.status" (recorded: gh.issue.list)`) {
		t.Errorf("missing probe: %q", e)
	}
}

func TestInspectCassetteErrors(t *testing.T) {
	tests := []struct{ body, want string }{
		{"kind: http_cassette\n", `kind: is "http_cassette"; an inspect cassette says kind: inspect_cassette`},
		{"kind: inspect_cassette\ninteractions:\n  - {op: read, target: a.txt}\n", `interactions[0].op: "read" is not replayed: kitsoki replays probe interactions (ctx.fs reads the workspace)`},
		{"kind: inspect_cassette\ninteractions:\n  - {op: probe, target: rm}\n", `interactions[0].target: "rm" is not an allow-listed probe (known: gh.issue.list, git.ls_files, git.status)`},
		{"kind: inspect_cassette\ninteractions:\n  - {op: probe, target: git.status}\n  - {op: probe, target: git.status}\n", `interactions[1].target: probe "git.status" is recorded twice; a probe is matched by its name, so keep one`},
		{"kind: inspect_cassette\ninteractions:\n  - {op: probe, target: git.status, status: 0}\n", `line 3: interactions[0].status: unknown key (known: op, target, exit, out)`},
	}
	for _, tt := range tests {
		_, err := parseInspectCassette([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %s", tt.body, err, tt.want)
		}
	}
}
