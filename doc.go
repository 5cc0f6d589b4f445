// Package kitsoki is the public Go API of the kitsoki runtime: open a
// story, bind its in-process agents and its host handlers to Go
// functions, replay a cassette in place of the declared agents, and drive
// a session turn by turn.
//
//	s, err := kitsoki.Open("stories/hello/app.yaml",
//		kitsoki.WithCassette("stories/hello/cassettes/demo.yaml"))
//	if err != nil { ... }
//	defer s.Close()
//	if _, err := s.Start(ctx); err != nil { ... }
//	out, err := s.Turn(ctx, "greet", map[string]any{"name": "Ada", "style": "formal"})
//	out, err = s.Say(ctx, "say hello to Ada") // free text, routed; out.Route says how
//
// A turn's error is a value: a *Rejection (the intent was refused, with
// the code and message `kitsoki run` prints), a *FaultError (the turn
// aborted on an expression or effect fault), one *CallError per call that
// failed with no on_error to handle it, or a *ReplayMissError (a cassette
// had no episode for a call). Several are joined with errors.Join; use
// errors.As to pick one out. The outcome is returned alongside, so the
// state and view after a failed call can still be checked.
//
// The wire types of agent calls are the ones plugin authors use
// (github.com/kitsoki/kitsoki/plugin): an in-process agent registered
// with WithAgent sees the same AskRequest a subprocess plugin decodes.
//
// Package kitsokitest builds on this one for go test: flow fixtures as
// subtests, cassette replay, and a cassette-backed agent.
package kitsoki
