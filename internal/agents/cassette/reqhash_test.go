package cassette

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// An episode carries the hash of the request it was recorded for. Replayed
// for another request it still answers, with a warning naming the episode
// and both hashes; under WithStrictRequests it does not match, and the call
// fails with that text. Episodes without a hash replay without the check.
// A request_hash that is not one is a load error naming its place.
func TestRequestHashLoadError(t *testing.T) {
	_, err := Parse([]byte("kind: host_cassette\nepisodes:\n  - id: a\n    match: {handler: host.x}\n    request_hash: abc\n    response: {data: {}}\n"),
		"c.yaml", WithGetenv(testkit.NoEnv))
	want := `cassette: c.yaml:5:19: episodes[0].request_hash: "abc" is not a request hash (16 lowercase hex characters, as kitsoki run --record writes it); delete the key to replay without the check`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// In a flow, a request-hash mismatch is a warning line under the flow's
// status; with WithCassetteStrict it is the turn's failure.
