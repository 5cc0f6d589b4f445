package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const intentsDataset = "testdata/routing/intents/dataset.yaml"

const intentsTable = `intent    correct  accuracy  95% interval
chat          1/1    100.0%  [20.7%, 100.0%]
forecast      2/2    100.0%  [34.2%, 100.0%]
none          1/1    100.0%  [20.7%, 100.0%]
quit          3/4     75.0%  [30.1%, 95.4%]
overall       7/8     87.5%  [52.9%, 97.8%]
`

const intentsMiss = `✗ testdata/routing/intents/dataset.yaml:7 [desk] "maybe later": routed to none (router tier), want quit: not sure what "maybe later" means here (maybe quit, confidence 0.20 < 0.50); rephrase, or type one of: forecast, quit
`

// TestIntentsAccuracy runs the dataset through the subprocess router and,
// offline, through the cassette recorded from it; below --min-accuracy the
// command exits 1 after printing the same report.
func TestIntentsAccuracy(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"subprocess router", nil, exitOK, ""},
		{"cassette router", []string{"--cassette", "testdata/routing/intents/router.yaml"}, exitOK, ""},
		{"below the bar", []string{"--cassette", "testdata/routing/intents/router.yaml", "--min-accuracy", "0.9"}, exitIntentsBelow,
			"kitsoki test intents: accuracy 87.5% (7/8) is below --min-accuracy 90.0%\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"test", "intents", routingStory, "--dataset", intentsDataset}, tt.args...)
			code, out, errs := runCLI(t, "", args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errs)
			}
			if out != intentsMiss+intentsTable {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, intentsMiss+intentsTable)
			}
			if errs != tt.wantErr {
				t.Errorf("stderr = %q, want %q", errs, tt.wantErr)
			}
		})
	}
}

func TestIntentsSetupErrors(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	write("bad.yaml", `cases:
  - {state: dsk, say: "hi", intent: forecast, slots: {town: x}}
  - {state: desk, intent: nope, extra: 1}
`, 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"dataset errors", []string{"--dataset", filepath.Join(dir, "bad.yaml")}, exitIntentsSetup,
			filepath.Join(dir, "bad.yaml") + `:2:13: cases[0].state: state "dsk" is not declared in the story (did you mean "desk"?)
` + filepath.Join(dir, "bad.yaml") + `:2:55: cases[0].slots.town: slot "town" is not a slot of intent "forecast"
` + filepath.Join(dir, "bad.yaml") + `:3:5: cases[1]: say: is required
` + filepath.Join(dir, "bad.yaml") + `:3:27: cases[1].intent: intent "nope" is not declared in the story; name a declared intent, or none for an utterance that should route nowhere
` + filepath.Join(dir, "bad.yaml") + `:3:33: cases[1].extra: unknown key "extra" (a case has state, say, intent, slots)`},
		{"no dataset flag: the fixtures, of which there are none", nil, exitIntentsSetup, "no intents fixtures (documents with test_kind: intents) in testdata/routing/intents/dataset.yaml, testdata/routing/intents/router.yaml; write some, or pass --dataset FILE"},
		{"bad bar", []string{"--dataset", intentsDataset, "--min-accuracy", "1.5"}, exitUsage, "--min-accuracy 1.5: want a number from 0 to 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCLI(t, "", append([]string{"test", "intents", routingStory}, tt.args...)...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant %d and:\n%s", code, errs, tt.code, tt.want)
			}
		})
	}
}

// A router that cannot be called fails every case, the ones that should
// route nowhere included: a failed call is a miss, not a correct "none".
func TestIntentsFailedRouterIsAMiss(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(routingStory)
	if err != nil {
		t.Fatal(err)
	}
	// The router plugin is not there: every router call fails.
	os.WriteFile(filepath.Join(dir, "app.yaml"), b, 0o600)
	os.WriteFile(filepath.Join(dir, "d.yaml"), []byte("cases:\n  - {state: desk, say: \"sing me a song\", intent: none}\n"), 0o600)
	code, out, errs := runCLI(t, "", "test", "intents", filepath.Join(dir, "app.yaml"), "--dataset", filepath.Join(dir, "d.yaml"))
	if code != exitIntentsBelow {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitIntentsBelow, out, errs)
	}
	if !strings.Contains(out, `"sing me a song": the router failed: `) || !strings.Contains(out, "none         0/1      0.0%") {
		t.Errorf("stdout:\n%s", out)
	}
}
