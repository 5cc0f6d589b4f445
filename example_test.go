package kitsoki_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/kitsoki/kitsoki"
	"github.com/kitsoki/kitsoki/plugin"
)

// Replay the hello story's recorded cassette and drive it turn by turn.
func ExampleOpen() {
	ctx := context.Background()
	s, err := kitsoki.Open("stories/hello/app.yaml",
		kitsoki.WithCassette("stories/hello/cassettes/demo.yaml"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	start, err := s.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(start.View)
	out, err := s.Turn(ctx, "greet", map[string]any{"name": "Ada", "style": "formal"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Says[0])
	fmt.Println(out.View)
	fmt.Println(s.State(), s.Allowed(), s.World()["greetings"])
	// Output:
	// Greeted so far: 0. Try: greet name=Ada style=formal
	// Good day, Ada. It is a pleasure to make your acquaintance.
	// Ada was greeted (formal).
	// greeted [again bye] 1
}

// Bind the story's builtin.inprocess agent to a Go func.
func ExampleWithAgent() {
	ctx := context.Background()
	greeter := func(ctx context.Context, req *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
		args, _ := req.With["args"].(map[string]any)
		return plugin.Submit(map[string]any{"text": fmt.Sprintf("Hi %v!", args["name"]), "tone": "casual", "done": true})
	}
	s, err := kitsoki.Open("stories/hello/app.yaml", kitsoki.WithAgent("agent.demo", greeter))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	out, err := s.Do(ctx, "greet name=Grace")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Says[0])
	// Output:
	// Hi Grace!
}

// Answer a host invoke with a Go func; bind: reads the returned map.
func ExampleWithHandler() {
	ctx := context.Background()
	s, err := kitsoki.Open("testdata/desk/app.yaml",
		kitsoki.WithAgent("agent.triage", func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			return plugin.Submit(map[string]any{"priority": "high"})
		}),
		kitsoki.WithHandler("host.tickets.create", func(_ context.Context, call kitsoki.Call) (map[string]any, error) {
			return map[string]any{"id": fmt.Sprintf("T-%v", call.Turn)}, nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	for _, line := range []string{"report text='printer on fire'", "file"} {
		out, err := s.Do(ctx, line)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(out.View)
	}
	// Output:
	// Priority: high
	// Ticket T-2 (high)
}

// A refused intent is an error value carrying the rejection code.
func ExampleRejection() {
	ctx := context.Background()
	s, err := kitsoki.Open("stories/hello/app.yaml",
		kitsoki.WithCassette("stories/hello/cassettes/demo.yaml"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = s.Do(ctx, "bye")
	var rej *kitsoki.Rejection
	if errors.As(err, &rej) {
		fmt.Println(err)
		fmt.Println("hint:", rej.GuardHint)
	}
	// Output:
	// GUARD_FAILED: no transition matched for intent "bye" in state "lobby"
	// hint: Greet somebody before you leave.
}

// The trace is kept in memory unless WithTraceFile says otherwise; on a
// test clock (WithStartTime) its timestamps are reproducible.
func ExampleSession_Events() {
	ctx := context.Background()
	s, err := kitsoki.Open("stories/hello/app.yaml",
		kitsoki.WithCassette("stories/hello/cassettes/demo.yaml"),
		kitsoki.WithStartTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Do(ctx, "greet name=Ada style=formal"); err != nil {
		log.Fatal(err)
	}
	evs, err := s.Events()
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == "agent.call.complete" {
			fmt.Println(ev.TS, ev.Kind, ev.CallID)
		}
	}
	// Output:
	// 2026-01-01T00:00:00Z agent.call.complete f566990f7953fbc7
}

// An agent fails a call with a chosen kind by returning an *AgentError.
func ExampleAgentError() {
	ctx := context.Background()
	s, err := kitsoki.Open("stories/hello/app.yaml", kitsoki.WithAgent("agent.demo",
		func(context.Context, *kitsoki.AskRequest) (*kitsoki.AskResponse, error) {
			return nil, &kitsoki.AgentError{Kind: kitsoki.KindTransportError, Detail: "greeter unreachable"}
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	out, err := s.Do(ctx, "greet name=Ada")
	if err != nil {
		log.Fatal(err)
	}
	h := out.Handled[0] // on_error: lobby handled it
	fmt.Println(h.Err, "→", h.OnError)
	// Output:
	// agent: transport_error: greeter unreachable → lobby
}
