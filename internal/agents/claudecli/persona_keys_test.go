package claudecli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// A persona's bash_profile: and a read-only room shape the CLI's tool
// rules; cwd: is where it runs.
func TestPersonaToolRules(t *testing.T) {
	work := t.TempDir()
	work, _ = filepath.EvalSymlinks(work)
	base := t.TempDir()
	tests := []struct {
		name       string
		verb       string
		persona    agent.Persona
		readOnly   bool
		allowed    string
		disallowed string
		mode       string
	}{
		{"commands", "ask", agent.Persona{Tools: []string{"Read", "Bash"}, Bash: &agent.BashProfile{Commands: []string{"git", "jq"}}},
			false, "Read,Bash(git:*),Bash(jq:*)", "AskUserQuestion,Agent,Task", "default"},
		{"read-only profile", "decide", agent.Persona{Tools: []string{"Bash"}, Bash: &agent.BashProfile{ReadOnly: true}},
			false, "Bash(grep:*),Bash(find:*)", "AskUserQuestion,Agent,Task", "default"},
		{"task ignores the profile", "task", agent.Persona{Tools: []string{"Read", "Bash"}, Bash: &agent.BashProfile{Commands: []string{"git"}}},
			false, "Read,Bash", "AskUserQuestion,Agent,Task", "acceptEdits"},
		{"read-only room", "task", agent.Persona{Tools: []string{"Read", "Edit", "Bash"}},
			true, "Read", "AskUserQuestion,Agent,Task,Write,Edit,MultiEdit,NotebookEdit,Bash", "default"},
		{"sandboxed", "ask", agent.Persona{Tools: []string{"Bash"}, Bash: &agent.BashProfile{Sandboxed: true, SandboxBase: base}, Cwd: work},
			false, "Bash", "AskUserQuestion,Agent,Task", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fakeRun{Result: "ok"})
			a := h.builtin()
			p := tt.persona
			p.Name, p.ToolsSet = "p", true
			if _, err := a.Ask(context.Background(), &agent.Call{Request: request(tt.verb, ""), Persona: &p, ReadOnly: tt.readOnly}); err != nil {
				t.Fatal(err)
			}
			l := h.logs()[0]
			allowed := l.Flags["--allowedTools"]
			if !strings.HasPrefix(allowed, tt.allowed) {
				t.Errorf("--allowedTools = %q, want it to start with %q", allowed, tt.allowed)
			}
			if d := cmp.Diff(tt.disallowed, l.Flags["--disallowedTools"]); d != "" {
				t.Errorf("--disallowedTools (-want +got):\n%s", d)
			}
			if l.Flags["--permission-mode"] != tt.mode {
				t.Errorf("--permission-mode = %q, want %q", l.Flags["--permission-mode"], tt.mode)
			}
			if p.Cwd != "" && l.Dir != p.Cwd {
				t.Errorf("ran in %q, want the persona's cwd %q", l.Dir, p.Cwd)
			}
			if p.Bash != nil && p.Bash.Sandboxed {
				if l.Env["HTTPS_PROXY"] != "http://127.0.0.1:9" || !strings.HasPrefix(l.Env["TMPDIR"], filepath.Join(base, "kitsoki-bash-")) {
					t.Errorf("sandbox env = %v", l.Env)
				}
				if _, err := os.Stat(l.Env["TMPDIR"]); !os.IsNotExist(err) {
					t.Errorf("the scratch directory %s was not removed: %v", l.Env["TMPDIR"], err)
				}
			}
		})
	}
}

// A call that fails after its sandbox's scratch directory was made (here
// the run's catalog is not kitsoki's) removes the directory again.
func TestFailedCallRemovesTheScratchDirectory(t *testing.T) {
	base := t.TempDir()
	h := newHarness(t, fakeRun{Result: "ok"})
	p := agent.Persona{Name: "p", Tools: []string{"Bash"}, ToolsSet: true, Bash: &agent.BashProfile{Sandboxed: true, SandboxBase: base}}
	_, err := h.builtin().Ask(context.Background(), &agent.Call{Request: request("ask", ""), Persona: &p, Run: &agent.Run{ID: "r", Catalog: foreignCatalog{}}})
	var ae *agent.AskError
	if !errors.As(err, &ae) || ae.Kind != agent.KindTransportError || !strings.Contains(ae.Detail, "the run's tool catalog is a claudecli.foreignCatalog") {
		t.Fatalf("Ask error = %v, want the catalog refusal", err)
	}
	left, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("left in the sandbox base: %v", left)
	}
}

// foreignCatalog is a tool catalog that is not kitsoki's MCP catalog.
type foreignCatalog struct{}

func (foreignCatalog) Generation() string { return "foreign" }
