package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/flosch/pongo2/v6"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/median"
)

const benchSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["decision", "reason", "confidence", "risk", "tags", "owner", "priority", "blocking", "summary", "score"],
  "properties": {
    "decision": {"enum": ["approve", "reject", "unsure"]},
    "reason": {"type": "string", "minLength": 1},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "risk": {"enum": ["low", "medium", "high"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "owner": {"type": "string"},
    "priority": {"type": "integer", "minimum": 1, "maximum": 5},
    "blocking": {"type": "boolean"},
    "summary": {"type": "string", "maxLength": 500},
    "score": {"type": "number"}
  }
}`

const benchSubmission = `{"decision":"approve","reason":"within policy","confidence":0.92,"risk":"low","tags":["travel","taxi"],"owner":"ann","priority":2,"blocking":false,"summary":"Taxi fare under the auto-approve limit.","score":7.5}`

// benchPrompt is the benchmark story's prompt file.
const benchPrompt = "Audit this claim: {{ args.claim }} for {{ args.amount }}.\nAnswer with a verdict."

const benchStory = `
app: {id: bench}
agents:
  auditor: {system_prompt: "Audit.", model: m}
agent_plugins: {agent.fast: {plugin: builtin.inprocess}}
world:
  claim: {type: string, default: "taxi 40"}
  amount: {type: int, default: 40}
  verdict: {type: object, default: {}}
intents: {go: {}}
root: s
states:
  s:
    on_enter:
      - invoke: host.agent.decide
        agent: agent.fast
        id: audit
        with:
          agent: auditor
          prompt: prompts/audit.md
          schema: schemas/verdict.json
          args: {claim: "{{ world.claim }}", amount: "{{ world.amount }}"}
        bind: {verdict: submitted}
`

// benchDecide loads the benchmark story with agent.fast answering
// benchSubmission in process, and returns its session (tracing to sink),
// started in state s, with a turn and the state's decide queued. The agent
// answers from memory and never blocks, so it is registered as such
// (agent.InlineFunc) and asked on the session's goroutine, as the cassette
// replayer's calls are.
func benchDecide(b testing.TB, sink trace.Sink) (*Session, *story.Story, *turnCtx, *queued) {
	return benchDecideWith(b, sink, func(f agent.AgentFunc) agent.Agent { return agent.InlineFunc(f) })
}

// benchDecideWith is benchDecide with the agent function wrapped by wrap.
func benchDecideWith(b testing.TB, sink trace.Sink, wrap func(agent.AgentFunc) agent.Agent) (*Session, *story.Story, *turnCtx, *queued) {
	app := writeStory(b, files{
		"app.yaml":             benchStory,
		"prompts/audit.md":     benchPrompt,
		"schemas/verdict.json": benchSchema,
	})
	st, err := story.Load(app)
	if err != nil {
		b.Fatal(err)
	}
	reg := agent.NewRegistry(nil)
	reg.Configure(st.Plugins)
	sub := json.RawMessage(benchSubmission)
	reg.Register("agent.fast", wrap(func(_ context.Context, c *agent.Call) (*agent.AskResponse, error) {
		if c.Request.Prompt != benchPromptWant { // the floors render the same prompt
			return nil, fmt.Errorf("prompt %q, want %q", c.Request.Prompt, benchPromptWant)
		}
		return &agent.AskResponse{Submission: sub}, nil
	}))
	s, err := New(st, host.New(st, reg, sink), sink, WithSessionID("bench"))
	if err != nil {
		b.Fatal(err)
	}
	s.started, s.state, s.turn = true, "s", 1
	return s, st, s.newTurn(1, "go", nil), &queued{inv: st.States["s"].OnEnter[0].Invoke}
}

// BenchmarkDecideInProcess drives one full host.agent.decide: re-render the
// with: map, render the prompt file, dispatch to an in-process agent that
// answers inline, validate against a 10-field schema, bind, and trace
// every step to a file.
func BenchmarkDecideInProcess(b *testing.B) {
	benchmarkDecide(b, benchDecide)
}

// BenchmarkDecideInProcessWorker is BenchmarkDecideInProcess with the
// agent registered as a plain agent.AgentFunc, which may block, so each
// call is handed to a worker goroutine the deadline can abandon.
func BenchmarkDecideInProcessWorker(b *testing.B) {
	benchmarkDecide(b, func(b testing.TB, sink trace.Sink) (*Session, *story.Story, *turnCtx, *queued) {
		return benchDecideWith(b, sink, func(f agent.AgentFunc) agent.Agent { return f })
	})
}

func benchmarkDecide(b *testing.B, setup func(testing.TB, trace.Sink) (*Session, *story.Story, *turnCtx, *queued)) {
	w, err := trace.Create(filepath.Join(b.TempDir(), "bench.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	s, _, t, q := setup(b, w)
	ctx := context.Background()
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		failed, err := s.dispatchOne(ctx, t, q)
		if err != nil || failed {
			b.Fatalf("dispatch: failed=%v err=%v errs=%v", failed, err, t.errs)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	median.Report(b, times) // the target is on the median; ns/op is the mean
}

// BenchmarkDecideFloor is the part of BenchmarkDecideInProcess that no
// implementation can skip, done with the libraries kitsoki uses: the
// with: map's two templates evaluated by expr-lang and the prompt file
// rendered by pongo2 (floorWork), the submission decoded by encoding/json
// and validated against the 10-field schema by santhosh-tekuri/jsonschema,
// and the five trace lines trace-format.md §5 requires of a decide
// (harness.dispatched, agent.call.start, agent.call.complete,
// world.update, harness.returned), each encoded by the trace writer and
// written with its own write(2) as §3 requires. The payloads are the ones
// a real dispatch produces. Routing, the agent call and binding come on
// top of this.
func BenchmarkDecideFloor(b *testing.B) {
	mem := trace.NewMemSink()
	s, st, t, q := benchDecide(b, mem)
	if failed, err := s.dispatchOne(context.Background(), t, q); err != nil || failed {
		b.Fatalf("dispatch: failed=%v err=%v", failed, err)
	}
	evs := mem.Events()
	if len(evs) != 5 {
		b.Fatalf("a decide wrote %d events, want 5", len(evs))
	}
	sch := st.Schemas["schemas/verdict.json"]
	if sch == nil {
		b.Fatalf("schema not compiled at load (have %d)", len(st.Schemas))
	}
	w, err := trace.Create(filepath.Join(b.TempDir(), "floor.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	work := newFloorWork(b, sch, s.world)
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		work.do(b)
		for j := range evs {
			ev := evs[j]
			ev.TS = ""
			if err := w.Append(&ev); err != nil {
				b.Fatal(err)
			}
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	median.Report(b, times)
}

// BenchmarkDecidePhysicalFloor is what BenchmarkDecideInProcess cannot go
// below on this machine with the libraries kitsoki uses, whatever kitsoki
// does around them: the rendering and validation of floorWork (expr-lang,
// pongo2, encoding/json and santhosh-tekuri/jsonschema, each compiled
// once and called directly), and the five trace lines of one decide,
// encoded beforehand (the bytes a real dispatch wrote), each handed to the
// kernel with one write(2). No trace encoding, dispatch or binding: the
// decide target (≤ 2.5×, issue 29) is a ratio to this.
func BenchmarkDecidePhysicalFloor(b *testing.B) {
	dir := b.TempDir()
	w, err := trace.Create(filepath.Join(dir, "decide.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	s, st, t, q := benchDecide(b, w)
	if failed, err := s.dispatchOne(context.Background(), t, q); err != nil || failed {
		b.Fatalf("dispatch: failed=%v err=%v", failed, err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "decide.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	lines = lines[1:] // the header line is written once per file, not per decide
	if len(lines) != 5 {
		b.Fatalf("a decide wrote %d lines, want 5", len(lines))
	}
	sch := st.Schemas["schemas/verdict.json"]
	f, err := os.OpenFile(filepath.Join(dir, "floor.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	work := newFloorWork(b, sch, s.world)
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		work.do(b)
		for _, l := range lines {
			if _, err := f.Write(l); err != nil {
				b.Fatal(err)
			}
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	median.Report(b, times)
}

// floorWork is the rendering and validation every decide of the benchmark
// story does, through the libraries alone, each compiled once: the with:
// map's {{ world.claim }} and {{ world.amount }} as expr-lang programs run
// on one reused VM, the prompt file as a pongo2 template rendered against
// the args they make, and the submission decoded by encoding/json (the
// schema library's UnmarshalJSON) and validated by
// santhosh-tekuri/jsonschema with the story's compiled schema.
type floorWork struct {
	claim, amount *vm.Program
	machine       vm.VM
	prompt        *pongo2.Template
	sch           *schema.Schema
	world         map[string]any
	sub           []byte
}

// benchPromptWant is what the benchmark's prompt file renders to.
const benchPromptWant = "Audit this claim: taxi 40 for 40.\nAnswer with a verdict."

func newFloorWork(b testing.TB, sch *schema.Schema, world map[string]any) *floorWork {
	if sch == nil {
		b.Fatal("the benchmark schema was not compiled at load")
	}
	env := expr.Env(map[string]any{"world": map[string]any{}})
	claim, err := expr.Compile("world.claim", env)
	if err != nil {
		b.Fatal(err)
	}
	amount, err := expr.Compile("world.amount", env)
	if err != nil {
		b.Fatal(err)
	}
	prompt, err := pongo2.FromString(benchPrompt)
	if err != nil {
		b.Fatal(err)
	}
	w := &floorWork{claim: claim, amount: amount, prompt: prompt, sch: sch, world: world, sub: []byte(benchSubmission)}
	if out := w.do(b); out != benchPromptWant {
		b.Fatalf("the floor's prompt is %q, want %q", out, benchPromptWant)
	}
	return w
}

// do renders and validates once and returns the prompt.
func (w *floorWork) do(b testing.TB) string {
	env := map[string]any{"world": w.world}
	claim, err := w.machine.Run(w.claim, env)
	if err != nil {
		b.Fatal(err)
	}
	amount, err := w.machine.Run(w.amount, env)
	if err != nil {
		b.Fatal(err)
	}
	out, err := w.prompt.Execute(pongo2.Context{"args": map[string]any{"claim": claim, "amount": amount}})
	if err != nil {
		b.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(w.sub))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.sch.Validate(v); err != nil {
		b.Fatal(err)
	}
	return out
}
