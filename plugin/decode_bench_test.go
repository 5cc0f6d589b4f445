package plugin

import "testing"

// BenchmarkParseRequest is the one-pass decoding of the usual agent.ask
// request line, against encoding/json's decoding of the same line.
func BenchmarkParseRequest(b *testing.B) {
	line := []byte(requestLines[0])
	b.Run("one_pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := parseRequestFast(line); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseRequestStandard(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
