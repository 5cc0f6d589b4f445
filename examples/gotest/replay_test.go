package gotest

import (
	"testing"
	"time"

	"github.com/kitsoki/kitsoki"
)

const (
	helloApp = "../../stories/hello/app.yaml"
	demoTape = "../../stories/hello/cassettes/demo.yaml"
)

// The hello story, its agent replayed from the cassette `kitsoki run
// --record` wrote: the views and the world are the recorded run's.
func TestReplayDemoCassette(t *testing.T) {
	s, err := kitsoki.Open(helloApp,
		kitsoki.WithCassette(demoTape),
		kitsoki.WithStartTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	start, err := s.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Greeted so far: 0. Try: greet name=Ada style=formal"; start.View != want {
		t.Errorf("start view = %q, want %q", start.View, want)
	}

	out, err := s.Turn(ctx, "greet", map[string]any{"name": "Ada", "style": "formal"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Ada was greeted (formal)."; out.View != want {
		t.Errorf("view = %q, want %q", out.View, want)
	}
	greeting, _ := s.World()["greeting"].(map[string]any)
	if greeting["text"] != "Good day, Ada. It is a pleasure to make your acquaintance." || greeting["tone"] != "formal" {
		t.Errorf("world.greeting = %v", greeting)
	}

	for _, line := range []string{"again", "greet name=Grace", "bye"} {
		if out, err = s.Do(ctx, line); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	if !out.Done || out.View != "Bye! 2 greeting(s) today." {
		t.Errorf("after bye: done=%v view=%q", out.Done, out.View)
	}
	if got := s.World()["greetings"]; got != int64(2) {
		t.Errorf("world.greetings = %#v, want 2", got)
	}

	// The trace holds both replayed agent calls, named by their episodes.
	evs, err := s.Events()
	if err != nil {
		t.Fatal(err)
	}
	var episodes []string
	for _, ev := range evs {
		if ev.Kind == "agent.call.start" {
			episodes = append(episodes, ev.EpisodeID)
		}
	}
	if len(episodes) != 2 || episodes[0] != "recorded_agent.demo_greeting" || episodes[1] != "recorded_agent.demo_greeting_2" {
		t.Errorf("agent.call.start episodes = %v", episodes)
	}
}
