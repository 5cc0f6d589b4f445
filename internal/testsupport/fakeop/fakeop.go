// Package fakeop is a run's live actions for handler tests: an operator
// who answers questions from a list (host.Call.Run.Live).
package fakeop

import (
	"context"
	"errors"
)

// ErrNoAnswer is the answer once the list is used up: no operator.
var ErrNoAnswer = errors.New("no operator can answer")

// Operator answers AskOperator with Answers, in order, and records the
// questions.
type Operator struct {
	Answers []string
	Asked   []string
}

// AskOperator takes the next answer.
func (o *Operator) AskOperator(_ context.Context, q string) (string, error) {
	o.Asked = append(o.Asked, q)
	if len(o.Answers) == 0 {
		return "", ErrNoAnswer
	}
	a := o.Answers[0]
	o.Answers = o.Answers[1:]
	return a, nil
}

func (o *Operator) World() map[string]any                                    { return nil }
func (o *Operator) AskParent(context.Context, string) (string, error)        { return "", ErrNoAnswer }
func (o *Operator) SetTitle(context.Context, string) error                   { return nil }
func (o *Operator) CompleteStep(context.Context, string) error               { return nil }
func (o *Operator) EmitIntent(context.Context, string, map[string]any) error { return nil }
