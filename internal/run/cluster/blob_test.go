package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

func TestBlobsDir(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvBlobsDir {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		flag, env, want string
	}{
		{"/shared/blobs", "/env", "/shared/blobs"},
		{"", "/env", "/env"},
		{"", "", filepath.Join("stories", ".kitsoki", "blobs")},
	} {
		if got := BlobsDir(tc.flag, "stories", env(tc.env)); got != tc.want {
			t.Errorf("BlobsDir(%q, env %q) = %q, want %q", tc.flag, tc.env, got, tc.want)
		}
	}
}

func bigPayload(t *testing.T, n int) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"text": strings.Repeat("x", n)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBlobCodecRoundTrip(t *testing.T) {
	b := &Blobs{Dir: t.TempDir()}
	small, big := bigPayload(t, 10), bigPayload(t, DefaultBlobThreshold+1)
	enc, err := b.Encode([]*commonpb.Payload{small, big})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(enc[0], small) {
		t.Errorf("a payload under the threshold was changed: %v", enc[0])
	}
	if got := string(enc[1].Metadata[converter.MetadataEncoding]); got != BlobEncoding {
		t.Fatalf("payload over the threshold has encoding %q, want %q", got, BlobEncoding)
	}
	if proto.Size(enc[1]) > 200 {
		t.Errorf("the reference is %d bytes", proto.Size(enc[1]))
	}
	dec, err := b.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(dec[0], small) || !proto.Equal(dec[1], big) {
		t.Error("decode did not give back the payloads")
	}
	// Content-addressed: the same payload is the same reference.
	again, err := b.Encode([]*commonpb.Payload{big})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(again[0], enc[1]) {
		t.Errorf("encoding twice gave %s and %s", again[0].Data, enc[1].Data)
	}
}

func TestBlobMissingOrCorrupt(t *testing.T) {
	dir := t.TempDir()
	b := &Blobs{Dir: dir}
	enc, err := b.Encode([]*commonpb.Payload{bigPayload(t, DefaultBlobThreshold)})
	if err != nil {
		t.Fatal(err)
	}
	var ref BlobRef
	if err := json.Unmarshal(enc[0].Data, &ref); err != nil {
		t.Fatal(err)
	}
	digest := ref.Digest
	hexd := strings.TrimPrefix(digest, "sha256:")
	file := filepath.Join(dir, "sha256", hexd[:2], hexd)

	junk := []byte("not the payload")
	if err := os.WriteFile(file, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(junk)
	_, err = b.Decode(enc)
	want := "blob " + digest + " in the blob store " + dir + ": blob corrupt: its content hashes to sha256:" +
		hex.EncodeToString(sum[:]) + "; restore the file " + file + " from another copy of the store"
	if err == nil {
		t.Fatal("corrupt blob: no error")
	}
	if d := cmp.Diff(want, err.Error()); d != "" {
		t.Errorf("corrupt blob (-want +got):\n%s", d)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	_, err = b.Decode(enc)
	wantMissing := "blob " + digest + " is not in the blob store " + dir +
		": blob missing; every worker and client of the cluster must share one blob directory (--blobs, $KITSOKI_BLOBS_DIR)"
	if err == nil {
		t.Fatal("missing blob: no error")
	}
	if d := cmp.Diff(wantMissing, err.Error()); d != "" {
		t.Errorf("missing blob (-want +got):\n%s", d)
	}

	_, err = b.Decode([]*commonpb.Payload{{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(BlobEncoding)},
		Data: []byte(`{"digest":"md5:abc","size":1}`)}})
	if err == nil || err.Error() != `blob reference "md5:abc": want sha256:<64 hex digits>` {
		t.Errorf("bad reference: %v", err)
	}
}

// TestSessionWithPayloadsOverTheThreshold runs the hello session with a
// name so long that the call's arguments, its answer and the world are all
// over the threshold: they travel as blobs and the session ends as a
// local run of the same inputs does.
func TestSessionWithPayloadsOverTheThreshold(t *testing.T) {
	ref, st := helloRef(t)
	// A low threshold keeps the test quick under -race (the workflow's
	// deadlock detector allows a task 1 s); the default's behaviour is
	// the same, at 256 KiB.
	const threshold = 16 << 10
	name := strings.Repeat("Ada ", threshold/4+1)
	steps := []step{{"greet", map[string]any{"name": name, "style": "formal"}}, {"bye", nil}}
	local, _ := localRun(t, st, steps)

	blobs := &Blobs{Dir: t.TempDir(), Threshold: threshold}
	env := newEnv(t)
	env.SetDataConverter(blobs.DataConverter())
	var results []*TurnResult
	var rejected []error
	sendUpdates(t, env, steps, &results, &rejected)
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res SessionResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(local.Session().World(), res.World.Map()); d != "" {
		t.Errorf("final world (-local +workflow):\n%s", d)
	}
	files, err := filepath.Glob(filepath.Join(blobs.Dir, "sha256", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	// At least the call's input, its result and the session's result.
	if len(files) < 3 {
		t.Errorf("%d blobs stored, want at least 3 (call input, call result, session result)", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "Ada Ada Ada") {
			t.Errorf("blob %s does not hold the long name", filepath.Base(f))
		}
	}
}
