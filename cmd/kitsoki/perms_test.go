//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Every file kitsoki writes for a run is private to the user, as its
// journals are: 0600 files in 0700 directories it creates (cassettes,
// trace pages, eval reports, flow reports and traces, drawings, session
// index entries), whatever the umask.
func TestArtifactsArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := t.TempDir()
	at := func(p string) string { return filepath.Join(root, p) }
	steps := []struct {
		args  []string
		files []string // that must be 0600
		dirs  []string // that kitsoki created: 0700
	}{
		{[]string{"run", hello, "--record", at("cas/new/demo.yaml"), "--sessions-dir", at("sessions"),
			"--intents", "greet name=Ada style=formal,again,greet name=Grace,bye"},
			[]string{"cas/new/demo.yaml"}, []string{"cas", "cas/new", "sessions"}},
		{[]string{"test", "flows", hello, "--json", at("r.json"), "--trace-out", at("flows/traces/run.jsonl")},
			[]string{"r.json", "flows/traces/run.happy_path.jsonl"}, []string{"flows", "flows/traces"}},
		{[]string{"viz", hello, "--format", "dot", "-o", at("viz.dot")}, []string{"viz.dot"}, nil},
		{[]string{"eval", "run", helloEval, "--live", "--cassette", helloCassette, "--report-dir", at("reports/evals")},
			[]string{"reports/evals/latest.json"}, []string{"reports", "reports/evals"}},
	}
	for _, s := range steps {
		if code, out, errs := runCLI(t, "", s.args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", s.args, code, out, errs)
		}
		for _, f := range s.files {
			checkMode(t, at(f), 0o600)
		}
		for _, d := range s.dirs {
			checkMode(t, at(d), 0o700|fs.ModeDir)
		}
	}
	// The session's journal and index entry, and the trace page written
	// beside the journal.
	ents, _ := os.ReadDir(at("sessions"))
	if len(ents) == 0 {
		t.Fatal("no session files")
	}
	var journal string
	for _, e := range ents {
		if e.IsDir() { // locks/, keys/
			checkMode(t, at("sessions/"+e.Name()), 0o700|fs.ModeDir)
			continue
		}
		checkMode(t, at("sessions/"+e.Name()), 0o600)
		if filepath.Ext(e.Name()) == ".jsonl" {
			journal = at("sessions/" + e.Name())
		}
	}
	if code, _, errs := runCLI(t, "", "trace", "view", journal); code != exitOK {
		t.Fatalf("trace view: exit %d\n%s", code, errs)
	}
	checkMode(t, journal[:len(journal)-len(".jsonl")]+".html", 0o600)
	// A page written over an existing world-readable file is private too.
	old644 := at("old.html")
	os.WriteFile(old644, []byte("x"), 0o644)
	if code, _, errs := runCLI(t, "", "trace", "view", journal, "-o", old644); code != exitOK {
		t.Fatalf("trace view -o: exit %d\n%s", code, errs)
	}
	checkMode(t, old644, 0o600)
	if ents, _ := filepath.Glob(at("reports/evals/*")); len(ents) < 2 {
		t.Errorf("eval reports: %v", ents)
	} else {
		for _, p := range ents {
			checkMode(t, p, 0o600)
		}
	}
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := fi.Mode() & (fs.ModePerm | fs.ModeDir); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}
