package testrunner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// Recording answers a flow's free-text input: turns: (state, input) →
// intent and slots, as Kitsoki's recording files hold them. Lookup is exact
// first, then case-insensitive.
type Recording struct {
	File    string
	entries []recordingEntry
}

type recordingEntry struct {
	state, input string
	intent       string
	slots        map[string]any
}

// Lookup returns the intent and slots recorded for input in state.
func (r *Recording) Lookup(state, input string) (string, map[string]any, bool) {
	for _, e := range r.entries {
		if e.state == state && e.input == input {
			return e.intent, e.slots, true
		}
	}
	for _, e := range r.entries {
		if e.state == state && strings.EqualFold(e.input, input) {
			return e.intent, e.slots, true
		}
	}
	return "", nil, false
}

var (
	recordingFields      = []string{"kind", "app_id", "app_version", "generated_at", "generator", "min_confidence", "entries"}
	recordingEntryFields = []string{"state", "input", "intent", "confidence", "majority_of"}
)

// LoadRecording reads a recording file.
func LoadRecording(file string) (*Recording, error) {
	b, err := cassette.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", file, err)
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(yamlnode.TrimBOM(b))).Decode(&doc); err != nil {
		return nil, fmt.Errorf("recording %s: %w", file, err)
	}
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return nil, fmt.Errorf("recording %s: %w", file, err)
	}
	top := &doc
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = top.Content[0]
	}
	if top.Kind != yaml.MappingNode {
		//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
		return nil, fmt.Errorf("%s:%d:%d: a recording must be a mapping with kind: recording and entries:", file, top.Line, top.Column)
	}
	m, err := keysOf(file, top, "recording", recordingFields)
	if err != nil {
		return nil, err
	}
	if k := m["kind"]; k == nil || k.Value != "recording" {
		return nil, fmt.Errorf("%s:%d:%d: kind must be recording", file, top.Line, top.Column)
	}
	r := &Recording{File: file}
	en := m["entries"]
	if en == nil || en.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d:%d: entries must be a list of {state, input, intent}", file, top.Line, top.Column)
	}
	for i, e := range en.Content {
		where := fmt.Sprintf("entries[%d]", i)
		if e.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d:%d: %s must be a mapping of state, input and intent", file, e.Line, e.Column, where)
		}
		em, err := keysOf(file, e, where, recordingEntryFields)
		if err != nil {
			return nil, err
		}
		var re recordingEntry
		for _, k := range []string{"state", "input"} {
			n := em[k]
			if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
				return nil, fmt.Errorf("%s:%d:%d: %s.%s must be a non-empty string", file, e.Line, e.Column, where, k)
			}
		}
		re.state, re.input = em["state"].Value, em["input"].Value
		in := em["intent"]
		if in == nil || in.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d:%d: %s.intent must be {name, slots}", file, e.Line, e.Column, where)
		}
		var iv struct {
			Name  string         `yaml:"name"`
			Slots map[string]any `yaml:"slots"`
		}
		if err := in.Decode(&iv); err != nil || iv.Name == "" {
			return nil, fmt.Errorf("%s:%d:%d: %s.intent must be {name, slots} with a name", file, in.Line, in.Column, where)
		}
		re.intent, re.slots = iv.Name, iv.Slots
		r.entries = append(r.entries, re)
	}
	return r, nil
}

// keysOf indexes a mapping's keys, refusing unknown ones with a suggestion.
func keysOf(file string, n *yaml.Node, where string, known []string) (map[string]*yaml.Node, error) {
	m := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !containsString(known, k.Value) {
			return nil, fmt.Errorf("%s:%d:%d: %s: unknown key %q (valid: %s)", file, k.Line, k.Column, where, k.Value, strings.Join(known, ", "))
		}
		m[k.Value] = n.Content[i+1]
	}
	return m, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// recordingPath resolves a fixture's recording: against the fixture's
// directory; without one, a fixture with input: turns uses
// <app dir>/recording.yaml when that file exists.
func recordingPath(fx *Fixture, dir, given string) string {
	if given != "" {
		p := filepath.FromSlash(given)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p
	}
	if fx.AppPath == "" {
		return ""
	}
	p := filepath.Join(filepath.Dir(fx.AppPath), "recording.yaml")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// Name is the recording's file, for messages.
func (r *Recording) Name() string { return r.File }

// Entries is the number of entries.
func (r *Recording) Entries() int { return len(r.entries) }
