package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// TestWorkerOptionsRegisterRunsASession registers the workflow and the
// activity with WorkerOptions.Register on the SDK test suite, as
// NewWorker does on a worker, and runs the hello story to its end.
func TestWorkerOptionsRegisterRunsASession(t *testing.T) {
	ref, _ := helloRef(t)
	var sessions []string
	o := WorkerOptions{StoriesDir: storiesDir, Config: func(st *story.Story, session string) runtime.Config {
		sessions = append(sessions, session)
		return agents(st)
	}}
	env := loadedEnv()
	o.Register(env)
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, helloSteps, &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s9"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.State != "farewell" || len(results) != 2 || len(rejected) != 0 {
		t.Errorf("result %+v, turns %d, rejected %v", res, len(results), rejected)
	}
	if len(sessions) == 0 || sessions[0] != "s9" {
		t.Errorf("the config factory saw sessions %v, want s9", sessions)
	}
}

func TestNewWorkerRefusesAMissingStoriesDir(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct{ dir, want string }{
		{"", "cluster worker: give the stories directory: the stories directory does not exist"},
		{missing, "stories directory " + missing + ": the stories directory does not exist; pass --stories DIR, the directory the sessions' story paths are relative to"},
		{file, "stories directory " + file + ": not a directory: the stories directory does not exist; pass --stories DIR, the directory the sessions' story paths are relative to"},
	} {
		_, err := NewWorker(c, WorkerOptions{StoriesDir: tc.dir})
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrNoStoriesDir) {
			t.Errorf("NewWorker(%q) = %v\nwant %q", tc.dir, err, tc.want)
		}
	}
	if _, err := NewWorker(nil, WorkerOptions{StoriesDir: storiesDir}); err == nil {
		t.Error("NewWorker with no client: no error")
	}
	w, err := NewWorker(c, WorkerOptions{StoriesDir: storiesDir})
	if err != nil || w == nil {
		t.Errorf("NewWorker(%s) = %v, %v", storiesDir, w, err)
	}
}
