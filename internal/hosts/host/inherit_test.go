package host

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// The story's context is put before a persona's system prompt, except
// for a persona that keeps the CLI's default prompt
// (inherit_claude_default:), which gets its own prompt alone.
func TestStoryContextAndInheritedDefault(t *testing.T) {
	p := &agent.Persona{Name: "guide", SystemPrompt: "You guide."}
	if got := withContext(p, "A lighthouse.").SystemPrompt; got != "A lighthouse.\n\nYou guide." {
		t.Errorf("context + persona = %q", got)
	}
	inherit := &agent.Persona{Name: "helper", SystemPrompt: "Help out.", InheritDefault: true}
	if got := withContext(inherit, "A lighthouse."); got.SystemPrompt != "Help out." {
		t.Errorf("an inheriting persona got %q", got.SystemPrompt)
	}
}
