package gotest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/plugin"
)

const ordersApp = "testdata/orders/app.yaml"

// pricer is the story's builtin.inprocess agent, as a Go func: it sees the
// same AskRequest a plugin would (rendered prompt, schema, with: args).
func pricer(_ context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
	args, _ := req.With["args"].(map[string]any)
	switch args["item"] {
	case "tea":
		return plugin.Submit(map[string]any{"price": 3})
	case "unicorn":
		return nil, &kitsoki.AgentError{Kind: kitsoki.KindTransportError, Detail: "no unicorns in stock"}
	}
	return plugin.Submit(map[string]any{"price": 0}) // outside the schema: minimum 1
}

// placeOrder is the story's host.orders.place handler.
func placeOrder(_ context.Context, call kitsoki.Call) (map[string]any, error) {
	if call.ID != "place" {
		return nil, fmt.Errorf("unexpected invoke id %q", call.ID)
	}
	return map[string]any{"id": fmt.Sprintf("%v-%v", call.Args["item"], call.Args["price"])}, nil
}

func openOrders(t *testing.T) *kitsoki.Session {
	t.Helper()
	s, err := kitsoki.Open(ordersApp, kitsoki.WithAgent("agent.pricer", pricer), kitsoki.WithHandler("host.orders.place", placeOrder))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// A Go-func agent prices the item and a Go-func host places the order.
func TestOrderWithGoFuncs(t *testing.T) {
	s := openOrders(t)
	ctx := t.Context()
	out, err := s.Do(ctx, "quote item=tea")
	if err != nil {
		t.Fatal(err)
	}
	if out.View != "tea costs 3." {
		t.Errorf("view = %q", out.View)
	}
	out, err = s.Do(ctx, "buy")
	if err != nil {
		t.Fatal(err)
	}
	if !out.Done || out.View != "Order tea-3 placed." {
		t.Errorf("after buy: done=%v view=%q", out.Done, out.View)
	}
}

// The agent's failures reach the story's on_error; the outcome names them
// with the text `kitsoki run` prints.
func TestOrderAgentFailures(t *testing.T) {
	tests := []struct {
		item string
		kind kitsoki.ErrorKind
		text string
	}{
		{"unicorn", kitsoki.KindTransportError, "agent: transport_error: no unicorns in stock"},
		{"dust", kitsoki.KindSchemaInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.item, func(t *testing.T) {
			s := openOrders(t)
			out, err := s.Do(t.Context(), "quote item="+tt.item)
			if err != nil {
				t.Fatal(err)
			}
			if out.State != "shop" || len(out.Handled) != 1 {
				t.Fatalf("state %q, handled %v: want shop after on_error", out.State, out.Handled)
			}
			var ae *kitsoki.AgentError
			if !errors.As(out.Handled[0].Err, &ae) || ae.Kind != tt.kind {
				t.Fatalf("failure = %v, want kind %s", out.Handled[0].Err, tt.kind)
			}
			if tt.text != "" && ae.Error() != tt.text {
				t.Errorf("failure text = %q, want %q", ae, tt.text)
			}
		})
	}
}

// A refused intent is an error value with the code the CLI prints.
func TestOrderRejection(t *testing.T) {
	s := openOrders(t)
	_, err := s.Do(t.Context(), "buy")
	var rej *kitsoki.Rejection
	if !errors.As(err, &rej) || rej.Code != kitsoki.CodeIntentNotAllowed {
		t.Fatalf("error = %v, want %s", err, kitsoki.CodeIntentNotAllowed)
	}
	if want := `INTENT_NOT_ALLOWED_IN_STATE: intent "buy" is not allowed in state "shop" (allowed: quote)`; err.Error() != want {
		t.Errorf("rejection = %q, want %q", err, want)
	}
}
