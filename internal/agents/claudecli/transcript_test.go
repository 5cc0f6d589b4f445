package claudecli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// eventKinds names each transcript event by its type (and subtype), or
// by its _kitsoki row.
func eventKinds(t *testing.T, evs []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		var m map[string]any
		if err := json.Unmarshal(e, &m); err != nil {
			t.Fatalf("event %s is not JSON: %v", e, err)
		}
		k, _ := m["type"].(string)
		if s, ok := m["subtype"].(string); ok {
			k += "/" + s
		}
		if s, ok := m["_kitsoki"].(string); ok {
			k = "_kitsoki/" + s
		}
		out = append(out, k)
	}
	return out
}

// A stream-json call's answer carries its agent-action transcript: every
// JSON line of every run as the CLI printed it (a progress line that is
// not JSON is not an event), a _kitsoki nudge row where kitsoki resumed
// the session, and an offset per event that never goes back.
func TestTranscriptCapturesTheStream(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "approve"}, fakeRun{Calls: []fakeCall{{Tool: "submit_kitsoki", Args: map[string]any{"decision": "approve", "reason": "ok"}}}, Result: "Submitted."})
	resp, err := h.builtin().Ask(context.Background(), agent.NewCall(request("decide", verdictSchema)))
	if err != nil {
		t.Fatal(err)
	}
	tr := resp.Transcript
	if tr == nil || tr.Format != TranscriptFormat {
		t.Fatalf("transcript %+v, want format %s", tr, TranscriptFormat)
	}
	want := []string{"system/init", "assistant", "result/success", "_kitsoki/nudge", "system/init", "assistant", "result/success"}
	if d := cmp.Diff(want, eventKinds(t, tr.Events)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	var nudge struct {
		Text      string `json:"text"`
		OuterIter int    `json:"outer_iter"`
	}
	if err := json.Unmarshal(tr.Events[3], &nudge); err != nil || nudge.Text != nudgeText || nudge.OuterIter != 1 {
		t.Errorf("nudge row %s", tr.Events[3])
	}
	if len(tr.Timings) != len(tr.Events) {
		t.Fatalf("%d timings for %d events", len(tr.Timings), len(tr.Events))
	}
	for i := 1; i < len(tr.Timings); i++ {
		if tr.Timings[i] < tr.Timings[i-1] || tr.Timings[0] < 0 {
			t.Errorf("timings go back: %v", tr.Timings)
		}
	}
}

// A call that fails keeps what the CLI printed before it failed on its
// AskError, for agent.call.error's transcript_ref.
func TestTranscriptOnFailure(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "I think it should be approved."})
	_, err := h.builtin(func(o *Options) { o.Nudges = -1 }).Ask(context.Background(), agent.NewCall(request("decide", verdictSchema)))
	ae, ok := agent.AsAskError(err)
	if !ok || ae.Kind != agent.KindSchemaInvalid {
		t.Fatalf("error %v", err)
	}
	if ae.Transcript == nil {
		t.Fatal("the failure carries no transcript")
	}
	if d := cmp.Diff([]string{"system/init", "assistant", "result/success"}, eventKinds(t, ae.Transcript.Events)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// With --output-format json there is no event stream, so no transcript.
func TestNoTranscriptWithJSONOutput(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "hello"})
	resp, err := h.builtin(func(o *Options) { o.JSONOutput = true }).Ask(context.Background(), agent.NewCall(request("ask", "")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Transcript != nil {
		t.Errorf("transcript %+v with JSON output", resp.Transcript)
	}
}

// io.Copy (how os/exec copies a child's output) stays within the cap, and
// stamped notes one time per line.
func TestCappedOutputHoldsItsLimitUnderIOCopy(t *testing.T) {
	c := &capped{limit: 4}
	if _, err := io.Copy(c, strings.NewReader("0123456789")); err != nil {
		t.Fatal(err)
	}
	if string(c.Bytes()) != "0123" {
		t.Errorf("kept %q, want the first 4 bytes", c.Bytes())
	}
	s := &stamped{capped: capped{limit: 1 << 10}, clk: clock.NewFake(time.Unix(0, 0))}
	if _, err := io.Copy(s, strings.NewReader("{\"a\":1}\n{\"b\":2}\nnoise\n")); err != nil {
		t.Fatal(err)
	}
	if n := len(s.stamps()); n != 3 {
		t.Errorf("%d line times, want 3", n)
	}
}
