package cassette

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// cassetteKeys are the top-level keys of a cassette file.
var cassetteKeys = []string{"kind", "app_id", "app_version", "source_run", "generated_at", "match_on", "record_mode", "phase_from", "episodes"}

// parseCassette reads the file's fields and episodes; the document is kept,
// includes unexpanded, for new_episodes appends.
func parseCassette(b []byte, path string) (*Cassette, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(yamlnode.TrimBOM(b), &doc); err != nil {
		return nil, err
	}
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, yamlnode.At(&doc, "kind", `must be %q, got ""`, CassetteKind)
	}
	orig := cloneNode(&doc)
	if err := expandIncludes(&doc, filepath.Dir(path)); err != nil {
		return nil, err
	}
	top, err := yamlnode.Fields(doc.Content[0], "cassette", cassetteKeys...)
	if err != nil {
		return nil, err
	}
	c := &Cassette{Path: path, doc: orig, keys: top}
	if c.Kind, err = yamlnode.Str(top, "kind", "cassette"); err != nil {
		return nil, err
	}
	if c.Kind != CassetteKind {
		at := top["kind"]
		if at == nil {
			at = doc.Content[0]
		}
		return nil, yamlnode.At(at, "kind", "must be %q, got %q", CassetteKind, c.Kind)
	}
	strs := map[string]*string{"app_id": &c.AppID, "app_version": &c.AppVersion, "source_run": &c.SourceRun,
		"generated_at": &c.GeneratedAt, "record_mode": &c.RecordMode, "phase_from": &c.PhaseFrom}
	for _, key := range yamlnode.Written(top, "app_id", "app_version", "source_run", "generated_at", "record_mode", "phase_from") {
		if *strs[key], err = yamlnode.Str(top, key, "cassette"); err != nil {
			return nil, err
		}
	}
	if v, ok := top["match_on"]; ok {
		if c.MatchOn, err = yamlnode.Value(v); err != nil {
			return nil, err
		}
	}
	if eps, ok := top["episodes"]; ok && eps.Tag != "!!null" {
		if eps.Kind != yaml.SequenceNode {
			return nil, yamlnode.At(eps, "episodes", "must be a list, got %s", yamlnode.KindName(eps))
		}
		for i, en := range eps.Content {
			ep, err := parseEpisode(en, i)
			if err != nil {
				return nil, err
			}
			c.Episodes = append(c.Episodes, ep)
		}
	}
	return c, nil
}

var (
	episodeKeys  = []string{"id", "match", "request_hash", "response", "delay", "replay", "agent"}
	responseKeys = []string{"data", "error", "infra_error", "delay", "replay"}
	agentKeys    = []string{"verb", "agent", "model", "turn", "duration_ms", "prompt_tokens", "response_tokens", "cost_usd",
		"system_prompt", "prompt", "input", "response", "submission", "error", "call_id", "transcript"}
)

func parseEpisode(n *yaml.Node, i int) (*Episode, error) {
	where := fmt.Sprintf("episodes[%d]", i)
	m, err := yamlnode.Fields(n, where, episodeKeys...)
	if err != nil {
		return nil, err
	}
	ep := &Episode{Line: n.Line, Col: n.Column, Path: where}
	if ep.ID, err = yamlnode.Str(m, "id", where); err != nil {
		return nil, err
	}
	if ep.ID == "" {
		ep.ID = "episode_" + strconv.Itoa(i+1)
	}
	if ep.Match, _, err = yamlnode.Mapping(m, "match", where); err != nil {
		return nil, err
	}
	if ep.RequestHash, err = yamlnode.Str(m, "request_hash", where); err != nil {
		return nil, err
	}
	if h := ep.RequestHash; h != "" && !IsRequestHash(h) {
		return nil, yamlnode.At(m["request_hash"], where+".request_hash", "%q is not a request hash (%d lowercase hex characters, as kitsoki run --record writes it); delete the key to replay without the check",
			h, requestHashLen)
	}
	delay, replay := m["delay"], m["replay"]
	if rn, ok := m["response"]; ok && rn.Tag != "!!null" {
		rm, err := yamlnode.Fields(rn, where+".response", responseKeys...)
		if err != nil {
			return nil, err
		}
		r := &ep.Response
		if r.Data, r.HasData, err = yamlnode.Mapping(rm, "data", where+".response"); err != nil {
			return nil, err
		}
		if r.HasData && r.Data == nil {
			r.Data = map[string]any{}
		}
		if r.Error, err = yamlnode.Str(rm, "error", where+".response"); err != nil {
			return nil, err
		}
		if r.InfraError, err = yamlnode.Str(rm, "infra_error", where+".response"); err != nil {
			return nil, err
		}
		both := map[string]**yaml.Node{"delay": &delay, "replay": &replay}
		for _, key := range yamlnode.Written(rm, "delay", "replay") {
			dst := both[key]
			if v, ok := rm[key]; ok {
				if *dst != nil {
					return nil, yamlnode.At(v, where+".response."+key, "%s is written both on the episode and in response", key)
				}
				*dst = v
			}
		}
	}
	if delay != nil && delay.Tag != "!!null" {
		ep.DelayText = delay.Value
		if ep.Delay, err = ParseDelay(delay.Value); err != nil {
			return nil, yamlnode.At(delay, where+".delay", "%w", err)
		}
	}
	if replay != nil && replay.Tag != "!!null" {
		if replay.Value != "any" {
			return nil, yamlnode.At(replay, where+".replay", "must be \"any\" (reusable) or absent, got %q", replay.Value)
		}
		ep.Reusable = true
	}
	if an, ok := m["agent"]; ok && an.Tag != "!!null" {
		if ep.Agent, err = parseAgentBlock(an, where+".agent"); err != nil {
			return nil, err
		}
	}
	return ep, nil
}

func parseAgentBlock(n *yaml.Node, where string) (*AgentBlock, error) {
	m, err := yamlnode.Fields(n, where, agentKeys...)
	if err != nil {
		return nil, err
	}
	// response may be written as a mapping or list for readability; it is
	// the JSON text of that value then.
	var resp *yaml.Node
	if r, ok := m["response"]; ok && (r.Kind == yaml.MappingNode || r.Kind == yaml.SequenceNode) {
		resp = r
		delete(m, "response")
	}
	var tr *Transcript
	if tn, ok := m["transcript"]; ok {
		delete(m, "transcript")
		if tn.Tag != "!!null" {
			if tr, err = parseTranscript(tn, where+".transcript"); err != nil {
				return nil, err
			}
		}
	}
	b := &AgentBlock{}
	if err := rebuild(m).Decode(b); err != nil {
		return nil, yamlnode.At(n, where, "%w", err)
	}
	if resp != nil {
		j, err := yamlnode.JSON(resp)
		if err != nil {
			return nil, yamlnode.At(resp, where+".response", "%w", err)
		}
		b.Response = string(j)
	}
	b.Transcript = tr
	if b.Input != nil {
		b.Input = yamlnode.StringKeys(b.Input)
	}
	return b, nil
}

// transcriptKeys are the keys of an agent block's transcript: (Kitsoki's
// recorded agent-action transcript).
var transcriptKeys = []string{"format", "events", "timings"}

// parseTranscript reads an agent block's transcript: its keys, format a
// string, events a list of JSON lines (strings, kept as written) or
// mappings (written as compact JSON, keys in their order), timings a list
// of millisecond offsets, at most one per event.
func parseTranscript(n *yaml.Node, where string) (*Transcript, error) {
	m, err := yamlnode.Fields(n, where, transcriptKeys...)
	if err != nil {
		return nil, err
	}
	t := &Transcript{}
	if t.Format, err = yamlnode.Str(m, "format", where); err != nil {
		return nil, err
	}
	if ev, ok := m["events"]; ok && ev.Tag != "!!null" {
		if t.Events, err = transcriptEvents(ev, where+".events"); err != nil {
			return nil, err
		}
	}
	if tm, ok := m["timings"]; ok && tm.Tag != "!!null" {
		if tm.Kind != yaml.SequenceNode {
			return nil, yamlnode.At(tm, where+".timings", "must be a list of millisecond offsets, got %s", yamlnode.KindName(tm))
		}
		for i, e := range tm.Content {
			var ms int64
			if e.Kind != yaml.ScalarNode || e.Decode(&ms) != nil || ms < 0 {
				return nil, yamlnode.At(e, fmt.Sprintf("%s.timings[%d]", where, i), "must be a whole number of milliseconds >= 0, got %q", e.Value)
			}
			t.Timings = append(t.Timings, ms)
		}
		if len(t.Timings) > len(t.Events) {
			return nil, yamlnode.At(tm, where+".timings", "has %d offsets for %d events: give at most one offset per event, in the events' order", len(t.Timings), len(t.Events))
		}
	}
	return t, nil
}

// transcriptEvents reads a transcript's events: each a JSON line as
// written, or a mapping written as compact JSON.
func transcriptEvents(ev *yaml.Node, where string) ([]string, error) {
	if ev.Kind != yaml.SequenceNode {
		return nil, yamlnode.At(ev, where, "must be a list of events (a JSON line each, or a mapping), got %s", shapeOf(ev))
	}
	out := make([]string, 0, len(ev.Content))
	for i, e := range ev.Content {
		p := fmt.Sprintf("%s[%d]", where, i)
		switch {
		case e.Kind == yaml.MappingNode:
			j, err := yamlnode.JSON(e)
			if err != nil {
				return nil, yamlnode.At(e, p, "%w", err)
			}
			out = append(out, string(j))
		case e.Kind == yaml.ScalarNode && e.Tag == "!!str":
			if strings.ContainsAny(e.Value, "\r\n") {
				return nil, yamlnode.At(e, p, "spans several lines: a transcript event is one line of JSON; write it on one line, or as a mapping")
			}
			if !json.Valid([]byte(e.Value)) {
				return nil, yamlnode.At(e, p, "is not a JSON line: write the event as one line of JSON, or as a mapping")
			}
			out = append(out, e.Value)
		default:
			return nil, yamlnode.At(e, p, "must be a JSON line (a quoted string) or a mapping, got %s", shapeOf(e))
		}
	}
	return out, nil
}

// shapeOf says what a node is, with a scalar's value ("a scalar \"42\"").
func shapeOf(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return fmt.Sprintf("%s %q", yamlnode.KindName(n), n.Value)
	}
	return yamlnode.KindName(n)
}

// rebuild makes a mapping node from checked fields (sorted, for stable
// decoding errors).
func rebuild(m map[string]*yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, k := range yamlnode.SortedKeys(m) {
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, m[k])
	}
	return out
}

// ParseDelay reads a Go duration, also accepting days ("3d", "1d12h").
func ParseDelay(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (write e.g. 200ms, 2s, 3d)", s)
		}
		days = time.Duration(n * float64(24*time.Hour))
		s = s[i+1:]
		if s == "" {
			return checkDelay(days)
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (write e.g. 200ms, 2s, 3d)", s)
	}
	return checkDelay(days + d)
}

func checkDelay(d time.Duration) (time.Duration, error) {
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return d, nil
}
