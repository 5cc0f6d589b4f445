package testrunner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agent/cassette"
	"github.com/kitsoki/kitsoki/internal/cassette/replay"
)

// writeFiles writes files (relative path → content) into a new temp dir
// and returns the dir.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func noEnv(string) string { return "" }

// mustCassette parses cassette YAML (no env) or fails the test.
func mustCassette(t testing.TB, yml string, opts ...cassette.LoadOption) *replay.Cassette {
	t.Helper()
	c, err := cassette.Parse([]byte(yml), filepath.Join(t.TempDir(), "c.yaml"), append([]cassette.LoadOption{cassette.WithGetenv(noEnv)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return replay.Wrap(c)
}

// greetStory is a one-call story: lobby --greet--> greeting, whose on_enter
// asks agent.g (verb decide) for a greeting and goes back to the lobby on
// error.
const greetStory = `app: {id: greet-test, version: 0.1.0}
agent_plugins:
  agent.g: {plugin: builtin.inprocess}
agents:
  greeter: {system_prompt: "Greet.", model: test-model}
world:
  greeting: {type: object, default: {}}
intents:
  greet: {slots: {name: {type: string, required: true}}}
  back: {}
root: lobby
states:
  lobby:
    on: {greet: [{target: greeting}]}
  greeting:
    view: "{{ world.greeting.text ?? '' }}"
    on_enter:
      - invoke: host.agent.decide
        agent: agent.g
        id: compose
        with:
          agent: greeter
          prompt: "Greet {{ slots.name }}."
          schema: schemas/greeting.json
          name: "{{ slots.name }}"
        bind: {greeting: submitted}
        on_error: lobby
    on: {back: [{target: lobby}]}
`

const greetingSchema = `{"type":"object","required":["text"],"properties":{"text":{"type":"string","minLength":1}},"additionalProperties":false}`

func greetFiles() map[string]string {
	return map[string]string{"app.yaml": greetStory, "schemas/greeting.json": greetingSchema}
}

func contains2(s, sub string) bool { return strings.Contains(s, sub) }

// firstSetupError runs fxs and returns the run's error or the first
// fixture's setup error (nil when every fixture ran).
func firstSetupError(r *Runner, fxs []*Fixture) (*Report, error) {
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		return rep, err
	}
	if errs := rep.SetupErrors(); len(errs) > 0 {
		return rep, errors.New(errs[0])
	}
	return rep, nil
}
