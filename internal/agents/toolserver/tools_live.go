package toolserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Names of the tools of the live surfaces.
const (
	ToolSubmit         = "submit_kitsoki"
	ToolGetWorld       = "get_world_kitsoki"
	ToolAskUser        = "ask_user_question_kitsoki"
	ToolAskParent      = "ask_parent_question_kitsoki"
	ToolSetTitle       = "set_task_title_kitsoki"
	ToolCompleteStep   = "complete_step_kitsoki"
	ToolEmitIntent     = "emit_intent_kitsoki"
	maxQuestionLength  = 4096
	maxTitleLength     = 200
	maxSummaryLength   = 4096
	submitWrapProperty = "value"
)

// prepareSubmit derives the submit tool's input schema and validator from
// the call's schema. MCP tool inputs are objects, so a schema whose root is
// not an object is wrapped as {"value": <schema>}.
func (s *Session) prepareSubmit() error {
	s.validate = s.cfg.Validate
	if len(s.cfg.Schema) == 0 {
		return nil
	}
	var root map[string]any
	if err := json.Unmarshal(s.cfg.Schema, &root); err != nil {
		return fmt.Errorf("mcp session: the call's schema is not a JSON object: %w", err)
	}
	s.wrapped = root["type"] != "object"
	if s.validate == nil {
		v, err := compileValidator(s.cfg.Schema)
		if err != nil {
			return fmt.Errorf("mcp session: the call's schema does not compile: %w", err)
		}
		s.validate = v
	}
	return nil
}

// submitSchema is the submit tool's input schema.
func (s *Session) submitSchema() json.RawMessage {
	switch {
	case len(s.cfg.Schema) == 0:
		return json.RawMessage(`{"type":"object"}`)
	case s.wrapped:
		return json.RawMessage(`{"type":"object","properties":{"` + submitWrapProperty + `":` + string(s.cfg.Schema) + `},"required":["` + submitWrapProperty + `"],"additionalProperties":false}`)
	default:
		return s.cfg.Schema
	}
}

// rawTool is a tool whose input schema is given as JSON.
func rawTool(name, title, description string, schema json.RawMessage) mcp.Tool {
	t := mcp.NewTool(name, mcp.WithDescription(description), mcp.WithTitleAnnotation(title))
	t.InputSchema = mcp.ToolInputSchema{}
	t.RawInputSchema = schema
	return t
}

// sessionTools: submit a structured result and read the world. Both live
// surfaces have them.
func sessionTools(s *Session, _ Profile) []Tool {
	submit := rawTool(ToolSubmit, "Submit result",
		"Submit this call's structured result. The arguments must match the call's schema; if they do not, the violations come back as a tool error: fix them and call again. The first valid submission is the answer; later ones are ignored.",
		s.submitSchema())
	Annotate(&submit, false, false, true, false)

	world := mcp.NewTool(ToolGetWorld,
		mcp.WithDescription("Read the run's world: the variables of the story run this call belongs to."),
		mcp.WithTitleAnnotation("Read the world"))
	Annotate(&world, true, false, true, false)

	return []Tool{
		{Def: submit, Handler: s.handleSubmit},
		{Def: world, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			vars := s.cfg.Live.World()
			if vars == nil {
				vars = map[string]any{}
			}
			return JSONResult(map[string]any{"run_id": s.cfg.RunID, "vars": vars}), nil
		}},
	}
}

func (s *Session) handleSubmit(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	var payload any = args
	if s.wrapped {
		v, ok := args[submitWrapProperty]
		if !ok {
			return ToolError("submission rejected: put the result under %q", submitWrapProperty), nil
		}
		payload = v
	}
	if payload == nil {
		payload = map[string]any{}
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return ToolError("submission rejected: %v", err), nil
	}
	if s.validate != nil {
		if err := s.validate(b); err != nil {
			return ToolError("submission rejected, it does not match the schema: %v. Fix these and call %s again.", err, ToolSubmit), nil
		}
	}
	s.mu.Lock()
	first := s.submission == nil
	if first {
		s.submission = b
	}
	s.mu.Unlock()
	if !first {
		return JSONResult(map[string]any{"accepted": false, "reason": "an earlier valid submission was already accepted; this one is ignored"}), nil
	}
	return JSONResult(map[string]any{"accepted": true}), nil
}

// kanbanTools: step completion and emitting an intent, for kanban-task.
func kanbanTools(s *Session, _ Profile) []Tool {
	step := mcp.NewTool(ToolCompleteStep,
		mcp.WithDescription("Mark the current step of the run as done, with a short summary of what was done."),
		mcp.WithTitleAnnotation("Complete step"),
		mcp.WithString("summary", mcp.Required(), mcp.Description("What was done, in a sentence or two."), mcp.MaxLength(maxSummaryLength)))
	Annotate(&step, false, false, false, false)

	emit := mcp.NewTool(ToolEmitIntent,
		mcp.WithDescription("Emit an intent on the run (with its slots). It fires when this agent call has finished, like a user's intent."),
		mcp.WithTitleAnnotation("Emit intent"),
		mcp.WithString("intent", mcp.Required(), mcp.Description("The intent's name.")),
		mcp.WithObject("slots", mcp.Description("The intent's slots.")))
	Annotate(&emit, false, false, false, false)

	return []Tool{
		{Def: step, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			summary, err := req.RequireString("summary")
			if err != nil {
				return ToolError("%v", err), nil
			}
			if len(summary) > maxSummaryLength {
				return ToolError("summary is longer than %d bytes", maxSummaryLength), nil
			}
			if err := s.cfg.Live.CompleteStep(ctx, summary); err != nil {
				return ToolError("could not complete the step: %s", errText(err)), nil
			}
			return JSONResult(map[string]any{"completed": true}), nil
		}},
		{Def: emit, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, err := req.RequireString("intent")
			if err != nil || strings.TrimSpace(name) == "" {
				return ToolError("intent: a non-empty intent name is required"), nil
			}
			var slots map[string]any
			if raw, ok := req.GetArguments()["slots"]; ok && raw != nil {
				m, ok := raw.(map[string]any)
				if !ok {
					return ToolError("slots: must be an object"), nil
				}
				slots = m
			}
			if err := s.cfg.Live.EmitIntent(ctx, name, slots); err != nil {
				return ToolError("could not emit intent %q: %s", name, errText(err)), nil
			}
			return JSONResult(map[string]any{"emitted": name}), nil
		}},
	}
}

func questionTool(name, title, description string) mcp.Tool {
	return mcp.NewTool(name,
		mcp.WithDescription(description),
		mcp.WithTitleAnnotation(title),
		mcp.WithString("question", mcp.Required(), mcp.Description("The question, self-contained."), mcp.MaxLength(maxQuestionLength)))
}

// askHandler answers a question tool through ask.
func askHandler(ask func(context.Context, string) (string, error), who string) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		q, err := req.RequireString("question")
		if err != nil || strings.TrimSpace(q) == "" {
			return ToolError("question: a non-empty question is required"), nil
		}
		if len(q) > maxQuestionLength {
			return ToolError("question is longer than %d bytes", maxQuestionLength), nil
		}
		answer, err := ask(ctx, q)
		if err != nil {
			return ToolError("could not ask the %s: %s", who, errText(err)), nil
		}
		return JSONResult(map[string]any{"answer": answer}), nil
	}
}

// userQuestionTools: ask the operator.
func userQuestionTools(s *Session, _ Profile) []Tool {
	t := questionTool(ToolAskUser, "Ask the operator",
		"Ask the human operator of this run a question and wait for the answer. Use it only when you cannot proceed without their input.")
	Annotate(&t, false, false, false, true)
	return []Tool{{Def: t, Handler: askHandler(s.cfg.Live.AskOperator, "operator")}}
}

// parentQuestionTools: ask the parent run (autopilot children).
func parentQuestionTools(s *Session, _ Profile) []Tool {
	t := questionTool(ToolAskParent, "Ask the parent run",
		"Ask the run that started this one a question and wait for its answer. Use it only when you cannot proceed without it.")
	Annotate(&t, false, false, false, false)
	return []Tool{{Def: t, Handler: askHandler(s.cfg.Live.AskParent, "parent run")}}
}

// taskTitleTools: set the run's title.
func taskTitleTools(s *Session, _ Profile) []Tool {
	t := mcp.NewTool(ToolSetTitle,
		mcp.WithDescription("Set this run's title: a short, specific name for what the run is about."),
		mcp.WithTitleAnnotation("Set run title"),
		mcp.WithString("title", mcp.Required(), mcp.Description("The title, one line."), mcp.MaxLength(maxTitleLength)))
	Annotate(&t, false, false, true, false)
	return []Tool{{Def: t, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		title, err := req.RequireString("title")
		title = strings.TrimSpace(title)
		switch {
		case err != nil || title == "":
			return ToolError("title: a non-empty title is required"), nil
		case len(title) > maxTitleLength || strings.ContainsAny(title, "\r\n"):
			return ToolError("title: one line of at most %d bytes", maxTitleLength), nil
		}
		if err := s.cfg.Live.SetTitle(ctx, title); err != nil {
			return ToolError("could not set the title: %s", errText(err)), nil
		}
		return JSONResult(map[string]any{"title": title}), nil
	}}}
}
