package subprocess

import (
	"encoding/json"
	"testing"
)

// BenchmarkAskReply is the one-pass decoding of the usual agent.ask
// response line, against encoding/json's decoding of the same line.
func BenchmarkAskReply(b *testing.B) {
	line := []byte(replyLines[0])
	b.Run("one_pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok := askReplyFast(line); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var env askEnvelope
			if err := json.Unmarshal(line, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
