package temporal

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// TestSecretsStayOutOfHistory runs a story whose host.run call sees a
// resolved ${VAR} secret, with a blob threshold low enough that the
// call's payloads travel as blobs, then reads the whole workflow history
// and every blob: the secret's value is nowhere (as bytes, nor base64),
// while the host did see it.
func TestSecretsStayOutOfHistory(t *testing.T) {
	const secret = "kitsoki-secret-value-7c41d2"
	t.Setenv("KITSOKI_TEST_SECRET", secret)
	t.Setenv("KITSOKI_TEST_SECRET_COPY", secret)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	blobs := &cluster.Blobs{Dir: t.TempDir(), Threshold: 256}
	c := semDial(t, ctx, client.Options{DataConverter: blobs.DataConverter()})
	st, err := story.Load("testdata/secret/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Secrets) != 1 || st.Secrets[0] != secret {
		t.Fatalf("story secrets %q, want the resolved value", st.Secrets)
	}
	queue := "secret"
	semWorker(t, c, queue, "testdata", func(*story.Story) runtime.Config { return runtime.Config{IgnorePins: true} })
	id := "secret-1"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, cluster.SessionWorkflowName,
		cluster.SessionInput{Story: cluster.StoryRef{Path: "secret/app.yaml", Hash: st.ContentHash}, SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	tr := semUpdate(t, ctx, c, id, cluster.IntentRequest{Intent: "go"})
	var res cluster.SessionResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if seen := res.World.Map()["seen"]; seen != true {
		t.Fatalf("world.seen = %v: the host did not see the resolved secret (turn %+v)", seen, tr)
	}
	if out := res.World.Map()["out"]; out != "the token is REDACTED\n" {
		t.Errorf("world.out = %q, want the echo masked", out)
	}

	hist, err := proto.Marshal(semHistory(t, ctx, c, id, run.GetRunID()))
	if err != nil {
		t.Fatal(err)
	}
	forms := [][]byte{[]byte(secret), []byte(base64.StdEncoding.EncodeToString([]byte(secret)))}
	for _, f := range forms {
		if bytes.Contains(hist, f) {
			t.Errorf("the workflow history holds the secret (as %q)", f)
		}
	}
	files, err := filepath.Glob(filepath.Join(blobs.Dir, "sha256", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no blob was written: the threshold did not apply")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range forms {
			if bytes.Contains(data, f) {
				t.Errorf("blob %s holds the secret", filepath.Base(file))
			}
		}
	}
}
