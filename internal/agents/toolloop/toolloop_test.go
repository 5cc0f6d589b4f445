package toolloop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

const schema = `{"type":"object","properties":{"verdict":{"type":"string","enum":["yes","no"]}},"required":["verdict"],"additionalProperties":false}`

func open(t *testing.T, verb string) *Tools {
	t.Helper()
	call := agent.NewCall(&agent.AskRequest{SessionID: "s1", CallID: "c1", Turn: 2, StatePath: "review", Verb: verb,
		Schema: json.RawMessage(schema), World: plugin.World{Vars: map[string]any{"topic": "tests"}}})
	tools, err := Open(context.Background(), call, Options{Namespace: "agent.api", Secrets: []string{"hunter2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tools.Close)
	return tools
}

func TestToolsOfADecide(t *testing.T) {
	tools := open(t, plugin.VerbDecide)
	ctx := context.Background()
	defs, err := tools.Defs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
		if d.Name == Submit && !sameJSON(d.InputSchema, schema) {
			t.Errorf("submit's input schema is %s, want the call's schema", d.InputSchema)
		}
	}
	if got := strings.Join(names, ","); got != "get_world_kitsoki,submit_kitsoki" {
		t.Errorf("tools %s", got)
	}
	if only, _ := tools.Defs(ctx, "get_world_kitsoki"); len(only) != 1 || only[0].Name != Submit {
		t.Errorf("except: %v", only)
	}

	res, err := tools.Call(ctx, "get_world_kitsoki", nil)
	if err != nil || res.IsError || !strings.Contains(res.Text, `"topic":"tests"`) {
		t.Errorf("get_world: %+v %v", res, err)
	}
	res, _ = tools.Call(ctx, Submit, json.RawMessage(`{"verdict":"maybe"}`))
	if !res.IsError || !strings.Contains(res.Text, "does not match the schema") {
		t.Errorf("an invalid submit: %+v", res)
	}
	if _, ok := tools.Submission(); ok {
		t.Error("an invalid submit was kept")
	}
	res, _ = tools.Call(ctx, Submit, json.RawMessage(`[1]`))
	if !res.IsError || !strings.Contains(res.Text, "not a JSON object") {
		t.Errorf("arguments that are not an object: %+v", res)
	}
	res, _ = tools.Call(ctx, Submit, json.RawMessage(`{"verdict":"yes"}`))
	if res.IsError {
		t.Errorf("a valid submit: %+v", res)
	}
	if sub, ok := tools.Submission(); !ok || string(sub) != `{"verdict":"yes"}` {
		t.Errorf("submission %s %v", sub, ok)
	}
	evs := tools.SubEvents()
	if len(evs) != 3 || evs[0].Kind != "agent.api.mcp.get_world_kitsoki" || evs[1].Payload["outcome"] != "tool_error" || evs[0].CallID != "c1" {
		t.Errorf("sub-events %+v", evs)
	}
}

func TestATaskGetsTheKanbanTools(t *testing.T) {
	defs, err := open(t, plugin.VerbTask).Defs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "complete_step_kitsoki,emit_intent_kitsoki,get_world_kitsoki,submit_kitsoki" {
		t.Errorf("tools %s", got)
	}
}

func sameJSON(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
