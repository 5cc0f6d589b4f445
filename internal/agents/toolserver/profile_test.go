package toolserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestProfileTable checks every surface × capability × provider
// combination against the groups it must enable (or the error it must
// give).
func TestProfileTable(t *testing.T) {
	capRows := []struct {
		caps   []Capability
		groups []string // the capability groups enabled, in registry order
		err    string
	}{
		{nil, nil, ""},
		{[]Capability{UserQuestion}, []string{"user-question"}, ""},
		{[]Capability{ParentQuestion}, []string{"parent-question"}, ""},
		{[]Capability{TaskTitle}, []string{"task-title"}, ""},
		{[]Capability{UserQuestion, TaskTitle}, []string{"user-question", "task-title"}, ""},
		{[]Capability{TaskTitle, ParentQuestion}, []string{"parent-question", "task-title"}, ""},
		{[]Capability{UserQuestion, ParentQuestion}, nil, "user-question and parent-question exclude each other"},
		{[]Capability{UserQuestion, ParentQuestion, TaskTitle}, nil, "user-question and parent-question exclude each other"},
	}
	surfaceRows := []struct {
		surface Surface
		head    []string // groups before the capability groups
		live    bool
	}{
		{KanbanTask, []string{"session", "kanban"}, true},
		{OfficeTask, []string{"session"}, true},
		// The outside surfaces' groups are internal/serve/mcpserve's registry.
		{Configuration, nil, false},
		{External, nil, false},
	}
	reg := DefaultRegistry()
	for _, sr := range surfaceRows {
		for _, cr := range capRows {
			for _, withProvider := range []bool{false, true} {
				var providers []string
				if withProvider {
					providers = []string{StoryFilesProvider}
				}
				name := fmt.Sprintf("%s/%v/provider=%v", sr.surface, cr.caps, withProvider)
				t.Run(name, func(t *testing.T) {
					p, err := NewProfile(sr.surface, cr.caps, providers)
					wantErr := cr.err
					if !sr.live && (len(cr.caps) > 0 || withProvider) {
						wantErr = "takes no capabilities or providers"
					}
					if wantErr != "" {
						if err == nil || !strings.Contains(err.Error(), wantErr) {
							t.Fatalf("NewProfile error = %v, want one containing %q", err, wantErr)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					want := append([]string{}, sr.head...)
					want = append(want, cr.groups...)
					if withProvider {
						want = append(want, "provider:story-files")
					}
					if sr.live {
						want = append(want, "plugin-tools")
					}
					if diff := cmp.Diff(want, reg.Enabled(p), cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("enabled groups (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

func TestResolveProfile(t *testing.T) {
	tests := []struct {
		name string
		verb string
		cc   *CallContext
		want string
		err  string
	}{
		{"detached task", "task", nil, "kanban-task", ""},
		{"detached decide", "decide", nil, "office-task", ""},
		{"normal task", "task", &CallContext{}, "kanban-task+user-question", ""},
		{"normal ask", "ask", &CallContext{}, "office-task+user-question", ""},
		{"extract", "extract", &CallContext{}, "office-task+user-question", ""},
		{"converse", "converse", &CallContext{}, "office-task+user-question", ""},
		{"non-autopilot child", "task", &CallContext{HasParent: true}, "kanban-task+user-question", ""},
		{"autopilot child", "task", &CallContext{Autopilot: true, HasParent: true}, "kanban-task+parent-question", ""},
		{"autopilot root", "task", &CallContext{Autopilot: true}, "kanban-task", ""},
		{"title owned", "task", &CallContext{TitleOwned: true}, "kanban-task+task-title+user-question", ""},
		{"providers sorted and deduplicated", "decide", &CallContext{Autopilot: true, ToolProviders: []string{"story-files", "b", "story-files"}}, "office-task+provider:b+provider:story-files", ""},
		{"unknown verb", "dance", nil, "", `unknown agent verb "dance"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ResolveProfile(tc.verb, tc.cc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tc.want {
				t.Errorf("profile = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseModeAliases(t *testing.T) {
	tests := map[string]string{
		"task":               "kanban-task",
		"task-title-pending": "kanban-task+task-title",
		"office":             "office-task",
		"config":             "configuration",
		"external":           "external",
		"kanban-task":        "kanban-task",
		"office-task":        "office-task",
		"configuration":      "configuration",
	}
	for in, want := range tests {
		p, err := ParseMode(in)
		if err != nil {
			t.Fatalf("ParseMode(%q): %v", in, err)
		}
		if p.String() != want {
			t.Errorf("ParseMode(%q) = %s, want %s", in, p, want)
		}
	}
	if _, err := ParseMode("admin"); err == nil || !strings.Contains(err.Error(), `unknown MCP surface "admin"`) {
		t.Errorf("ParseMode(admin) error = %v", err)
	}
}

func TestNewProfileErrors(t *testing.T) {
	if _, err := NewProfile("kanban", nil, nil); err == nil || !strings.Contains(err.Error(), `unknown MCP surface "kanban"`) {
		t.Errorf("unknown surface: %v", err)
	}
	if _, err := NewProfile(OfficeTask, []Capability{"sudo"}, nil); err == nil || !strings.Contains(err.Error(), `unknown MCP capability "sudo"`) {
		t.Errorf("unknown capability: %v", err)
	}
	p, _ := NewProfile(OfficeTask, nil, []string{"github-pr"})
	if err := DefaultRegistry().Check(p); err == nil || !strings.Contains(err.Error(), `unknown tool provider "github-pr" (known: story-files)`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestRegistryRejectsBadGroups(t *testing.T) {
	on := func(Profile) bool { return true }
	reg := func(*Session, Profile) []Tool { return nil }
	if _, err := NewRegistry(Group{Name: "a", Enabled: on, Register: reg}, Group{Name: "a", Enabled: on, Register: reg}); err == nil || !strings.Contains(err.Error(), `group "a" is declared twice`) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := NewRegistry(Group{Name: "a", Register: reg}); err == nil || !strings.Contains(err.Error(), "needs both") {
		t.Errorf("no rule: %v", err)
	}
}
