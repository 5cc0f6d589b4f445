package catalog

import (
	"sort"
	"testing"
)

func TestTablesAreSortedAndUnique(t *testing.T) {
	var names []string
	for _, s := range Builtins() {
		names = append(names, s.Name)
		if s.Summary == "" || len(s.Results) == 0 {
			t.Errorf("%s: needs a summary and its result fields", s.Name)
		}
		for _, f := range s.Fields {
			if f.Required && f.Doc == "" {
				t.Errorf("%s: required with.%s has no Doc (the loader's \"needs with.%s: <doc>\" error prints it)", s.Name, f.Name, f.Name)
			}
		}
		if _, ok := Refused(s.Name); ok {
			t.Errorf("%s is both built and refused", s.Name)
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("Builtins not sorted: %v", names)
	}
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			t.Errorf("%s listed twice", names[i])
		}
	}
}

func TestRefused(t *testing.T) {
	tests := []struct {
		name  string
		needs string // "" means not refused
	}{
		{"host.jira", "Jira"},
		{"host.jira.get", "Jira"},
		{"host.jira_comment", "Jira"},
		{"host.cypilot_artifacts.create", "cypilot"},
		{"host.git.commit", ""},
		{"host.local.run_tests", ""},
		{"host.ide.open_file", ""},
		{"host.ideas", ""},
		{"host.slidey.render", "slidey"},
		{"host.contact_sheet", "ffmpeg montages"},
		{"host.video.frame", "ffmpeg"},
		{"host.run", ""},
		{"host.probe", ""},
	}
	for _, tt := range tests {
		u, ok := Refused(tt.name)
		if ok != (tt.needs != "") || u.Needs != tt.needs {
			t.Errorf("Refused(%q) = %+v, %v; want needs %q", tt.name, u, ok, tt.needs)
		}
	}
}

func TestLookup(t *testing.T) {
	s, ok := Lookup("host.run")
	if !ok || !s.CheckFields {
		t.Fatalf("Lookup(host.run) = %+v, %v", s, ok)
	}
	if f, ok := s.Field("cmd"); !ok || !f.Required {
		t.Errorf("host.run cmd = %+v, %v; want required", f, ok)
	}
	if _, ok := Lookup("host.agent"); ok {
		t.Error("Lookup matched a prefix")
	}
}
