package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// kitsoki docs lists the topics, prints a page by path or by its last
// element, prints a schema, and answers a typo with the nearest topic.
func TestDocsCommand(t *testing.T) {
	code, out, errs := runCLI(t, "", "docs")
	if code != exitOK {
		t.Fatalf("docs: exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		`tutorial +Tutorial: your first story in 15 minutes`,
		`llm-guide +Writing kitsoki stories: a guide for a language model`,
		`agents/claude +\S.*`,
		`schemas/app +JSON Schema \(schemas/app\.schema\.json\)`,
	} {
		if !regexp.MustCompile("(?m)^  " + want + "$").MatchString(out) {
			t.Errorf("docs lacks a line %q:\n%s", want, out)
		}
	}
	tutorial, _ := os.ReadFile("../../docs/tutorial.md")
	for _, topic := range []string{"tutorial", "docs/tutorial.md", "tutorial.md"} {
		if code, out, _ := runCLI(t, "", "docs", topic); code != exitOK || out != string(tutorial) {
			t.Errorf("docs %s: exit %d, %d bytes, want the page (%d bytes)", topic, code, len(out), len(tutorial))
		}
	}
	claude, _ := os.ReadFile("../../docs/agents/claude.md")
	if code, out, _ := runCLI(t, "", "docs", "claude"); code != exitOK || out != string(claude) {
		t.Errorf("docs claude: exit %d, want agents/claude.md", code)
	}
	views, _ := os.ReadFile("../../docs/views/README.md")
	if code, out, _ := runCLI(t, "", "docs", "views"); code != exitOK || out != string(views) {
		t.Errorf("docs views: exit %d, want views/README.md", code)
	}
	if code, out, _ := runCLI(t, "", "docs", "schemas/flow"); code != exitOK || !json.Valid([]byte(out)) {
		t.Errorf("docs schemas/flow: exit %d, not JSON", code)
	}
	for _, tc := range []struct{ topic, want string }{
		{"stoires", `kitsoki docs: no topic "stoires" (did you mean stories?); kitsoki docs lists the topics` + "\n"},
		{"llm-gide", `kitsoki docs: no topic "llm-gide" (did you mean llm-guide?); kitsoki docs lists the topics` + "\n"},
		{"schemas/ap", `kitsoki docs: no topic "schemas/ap" (did you mean schemas/app?); kitsoki docs lists the topics` + "\n"},
		{"zzzzzzzzzz", `kitsoki docs: no topic "zzzzzzzzzz"; kitsoki docs lists the topics` + "\n"},
	} {
		if code, out, errs := runCLI(t, "", "docs", tc.topic); code != exitUsage || out != "" || errs != tc.want {
			t.Errorf("docs %s: exit %d\n%s%s\nwant %q", tc.topic, code, out, errs, tc.want)
		}
	}
}

// kitsoki docs llm-guide is the guide, then the JSON Schemas of a story,
// a flow and a cassette, each a JSON block that parses.
func TestDocsLLMGuide(t *testing.T) {
	code, out, errs := runCLI(t, "", "docs", "llm-guide")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	guide, _ := os.ReadFile("../../docs/llm-guide.md")
	if !strings.HasPrefix(out, string(guide)) {
		t.Fatal("the output does not start with docs/llm-guide.md")
	}
	blocks := regexp.MustCompile("(?s)### schemas/(\\w+)\\.schema\\.json\n\n```json\n(.*?)```\n").FindAllStringSubmatch(out[len(guide):], -1)
	var names []string
	for _, b := range blocks {
		names = append(names, b[1])
		disk, _ := os.ReadFile(filepath.Join("../../schemas", b[1]+".schema.json"))
		if !json.Valid([]byte(b[2])) || strings.TrimSpace(b[2]) != strings.TrimSpace(string(disk)) {
			t.Errorf("schema %s: not the file's JSON", b[1])
		}
	}
	if strings.Join(names, " ") != "app flow cassette" {
		t.Errorf("schemas in the guide: %v", names)
	}
}

// The guide's complete example is a story that loads and whose flow passes
// (in the agent template's directory, with its prompt, schema and
// cassette).
func TestDocsLLMGuideExample(t *testing.T) {
	guide, _ := os.ReadFile("../../docs/llm-guide.md")
	_, example, ok := strings.Cut(string(guide), "## A complete example")
	if !ok {
		t.Fatal("no example section")
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(example)
	if m == nil {
		t.Fatal("no YAML block in the example")
	}
	dir := filepath.Join(t.TempDir(), "sorter")
	if _, err := scaffold(dir, "agent"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(m[1]), 0o644)
	if code, out, errs := runCLI(t, "", "validate", dir); code != exitOK || errs != "" {
		t.Errorf("validate: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "", "test", "flows", dir); code != exitOK {
		t.Errorf("test flows: exit %d\n%s%s", code, out, errs)
	}
}
