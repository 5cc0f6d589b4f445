package kitsoki

import (
	"context"

	"github.com/kitsoki/kitsoki/internal/base/jobs"
)

// RequestClarification asks the session a question from a HandlerFunc
// running as a background job (its invoke has background: true), and
// waits for the answer the story gives with host.jobs.answer_clarification
// (the job reads it on its next poll, every 200 ms of the session's
// clock). fields, optional, names what the answer should hold; it is
// traced with the question. Outside a background job it fails at once.
func RequestClarification(ctx context.Context, prompt string, fields map[string]string) (any, error) {
	return jobs.RequestClarification(ctx, jobs.Question{Prompt: prompt, Fields: fields})
}
