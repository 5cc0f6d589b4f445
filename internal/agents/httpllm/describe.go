package httpllm

import (
	"context"
	"errors"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// Hints are what a failure's message names: where the agent is declared
// and what it was asked for, so the message can say how to fix it.
type Hints struct {
	// API is the client's name ("anthropic API").
	API string
	// Where is the declaration: "agent_plugins.agent.x" or
	// ".kitsoki.yaml profiles.fast".
	Where string
	// KeyEnv is the variable the key was read from.
	KeyEnv string
	// Model is the model asked for; ModelExample names one that exists.
	Model, ModelExample string
}

// MissingKey is the failure of a call whose API key is not set.
func MissingKey(h Hints) *agent.AskError {
	return agent.Errorf(agent.KindTransportError,
		"%s key missing: %s is not set; export %s=<your key>, or name the variable that holds it with api_key_env: under %s",
		h.API, h.KeyEnv, h.KeyEnv, h.Where)
}

// Describe turns a failed request into the call's failure: one line that
// says what went wrong and how to fix it. A cost cap reached is kept as
// the cause (the host stops the run on it).
func Describe(ctx context.Context, err error, h Hints) *agent.AskError {
	var (
		ae  *APIError
		ce  *ConnError
		cap *agent.CostCapError
		ask *agent.AskError
	)
	switch {
	case errors.As(err, &ask):
		return ask
	case errors.As(err, &cap):
		return &agent.AskError{Kind: agent.KindTransportError, Detail: cap.Error(), Err: cap}
	case ctx.Err() != nil:
		return agent.Errorf(agent.KindDeadlineExceeded, "%s: the call ended before the answer came: %w", h.API, context.Cause(ctx))
	case errors.As(err, &ce):
		return describeConn(ce, h)
	case errors.As(err, &ae):
		return describeAPI(ae, h)
	}
	return agent.Errorf(agent.KindTransportError, "%s: %v", h.API, err)
}

func describeConn(ce *ConnError, h Hints) *agent.AskError {
	if ce.Timeout {
		return agent.Errorf(agent.KindTransportError, "%v: raise timeout: under %s, or check the server", ce, h.Where)
	}
	return agent.Errorf(agent.KindTransportError, "%v: check base_url: under %s (and that the server is up)", ce, h.Where)
}

func describeAPI(ae *APIError, h Hints) *agent.AskError {
	var fix string
	switch {
	case ae.Status == 401 || ae.Status == 403:
		return agent.Errorf(agent.KindTransportError, "%s refused the key in %s (%v): check the key, or point api_key_env: under %s at the variable that holds the right one",
			h.API, h.KeyEnv, ae, h.Where)
	case ae.Status == 404 && modelMissing(ae):
		ex := ""
		if h.ModelExample != "" {
			ex = " (e.g. " + h.ModelExample + ")"
		}
		return agent.Errorf(agent.KindTransportError, "%s has no model %q (%v): set model: under %s to one it serves%s",
			h.API, h.Model, ae, h.Where, ex)
	case ae.Status == 404:
		fix = "check base_url: under " + h.Where
	case ae.Status == 429:
		fix = "wait and run again, or raise retries: under " + h.Where
	case ae.Status >= 500:
		fix = "the provider failed; run again later (retries: under " + h.Where + " sets how often kitsoki retries)"
	case ae.Status == 400 || ae.Status == 422:
		fix = "the request was refused as written; check model:, max_tokens: and the schema"
	}
	if fix == "" {
		return agent.Errorf(agent.KindTransportError, "%v", ae)
	}
	return agent.Errorf(agent.KindTransportError, "%v: %s", ae, fix)
}

// modelMissing reports a 404 that names the model: OpenAI's
// model_not_found, Anthropic's not_found_error about model:.
func modelMissing(ae *APIError) bool {
	msg := strings.ToLower(ae.Message)
	return ae.Code == "model_not_found" || strings.Contains(msg, "model")
}

// Truncated is the failure of an answer cut off at the output bound.
func Truncated(h Hints, maxTokens int) *agent.AskError {
	if maxTokens <= 0 {
		return agent.Errorf(agent.KindTransportError, "%s: the answer was cut off at the model's output limit: set max_tokens: under %s, or ask for a shorter answer",
			h.API, h.Where)
	}
	return agent.Errorf(agent.KindTransportError, "%s: the answer was cut off at max_tokens %d: raise max_tokens: under %s",
		h.API, maxTokens, h.Where)
}

// TooManyTurns is the failure of a tool loop that did not finish.
func TooManyTurns(h Hints, turns int) *agent.AskError {
	return agent.Errorf(agent.KindPluginCrash, "%s: the model had not finished after %d turns: raise max_turns: under %s, or narrow the task",
		h.API, turns, h.Where)
}

// NoSubmission is the schema_invalid failure of a call whose answer never
// matched its schema, with the last violations.
func NoSubmission(verb string, tries int, last string) *agent.AskError {
	if last == "" {
		last = "no answer was submitted"
	}
	return agent.Errorf(agent.KindSchemaInvalid, "host.agent.%s: the model's answer did not match the schema after %d %s: %s",
		verb, tries, plural(tries, "try", "tries"), last)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ErrUnsupportedEffort is the message of an effort a backend does not
// know.
func ErrUnsupportedEffort(api, effort, known string) *agent.AskError {
	return agent.Errorf(agent.KindTransportError, "%s: effort %q is not one of %s", api, effort, known)
}
