package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Kitsoki's Cloak of Darkness, copied to a temporary directory, won with
// inflected commands no example spells as written: the bare tier compares
// Porter2 stems ("hanging" meets "hang the cloak", "messages" meets "read
// the message"), so no model is asked.
func TestCloakWonWithInflectedWords(t *testing.T) {
	app := kitsokiApp(t, "cloak")
	tr := filepath.Join(filepath.Dir(app), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", app, "--semantic-routing", "--trace", tr,
		"--say", "go west", "--say", "hanging my cloak", "--say", "go east", "--say", "head south", "--say", "reading the messages")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"Cloak: hung up", "You have won."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errs, "ROUTER") {
		t.Errorf("a model was asked:\n%s", errs)
	}
}
