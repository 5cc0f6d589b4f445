package schema

import "testing"

// A slot format checks string values: the JSON Schema formats through the
// library, jql for its shape; other values pass.
func TestCheckFormat(t *testing.T) {
	tests := []struct {
		format string
		v      any
		ok     bool
	}{
		{"email", "ada@example.com", true},
		{"email", "ada-at-example", false},
		{"date", "2024-02-29", true},
		{"date", "2024-02-30", false},
		{"uuid", "6f1c1b2e-5f8a-4c3b-9d0e-1a2b3c4d5e6f", true},
		{"semver", "1.2.3", true},
		{"semver", "1.2", false},
		{"jql", `project = KIT AND status in ("To Do", Done) ORDER BY created`, true},
		{"jql", "ORDER BY created DESC", true},
		{"jql", `project = "KIT`, false},
		{"jql", "(project = KIT", false},
		{"jql", "just words", false},
		{"email", 42, true},
	}
	for _, tt := range tests {
		if err := CheckFormat(tt.format, tt.v); (err == nil) != tt.ok {
			t.Errorf("CheckFormat(%s, %v) = %v, want ok %v", tt.format, tt.v, err, tt.ok)
		}
	}
	if err := CheckFormat("postcode", "x"); err == nil {
		t.Error("an unknown format passed")
	}
}
