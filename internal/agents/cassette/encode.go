package cassette

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Encode renders the cassette as YAML with a stable layout: header keys in
// a fixed order, episodes in order, episode keys in a fixed order, map keys
// sorted. The same cassette always encodes to the same bytes.
func (c *Cassette) Encode() ([]byte, error) {
	doc, err := c.node()
	if err != nil {
		return nil, err
	}
	return encodeNode(doc)
}

// EncodeWithComment is Encode with comment heading the document.
func (c *Cassette) EncodeWithComment(comment string) ([]byte, error) {
	doc, err := c.node()
	if err != nil {
		return nil, err
	}
	doc.HeadComment = comment
	return encodeNode(doc)
}

// WriteFile writes the cassette to path (zstd-compressed when the name ends
// in .zst), atomically.
func (c *Cassette) WriteFile(path string) error {
	b, err := c.Encode()
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(path, b); err != nil {
		return fmt.Errorf("cassette: %q: %w", path, err)
	}
	return nil
}

func encodeNode(doc *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// node builds the document node of the cassette.
func (c *Cassette) node() (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	kind := c.Kind
	if kind == "" {
		kind = CassetteKind
	}
	addStr(m, "kind", kind)
	addStrOpt(m, "app_id", c.AppID)
	addStrOpt(m, "app_version", c.AppVersion)
	addStrOpt(m, "source_run", c.SourceRun)
	addStrOpt(m, "generated_at", c.GeneratedAt)
	if c.MatchOn != nil {
		if err := addValue(m, "match_on", c.MatchOn); err != nil {
			return nil, err
		}
	}
	mode := c.RecordMode
	if mode == "" {
		mode = ModeNone
	}
	addStr(m, "record_mode", mode)
	addStrOpt(m, "phase_from", c.PhaseFrom)
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, ep := range c.Episodes {
		n, err := episodeNode(ep)
		if err != nil {
			return nil, err
		}
		seq.Content = append(seq.Content, n)
	}
	m.Content = append(m.Content, scalar("episodes"), seq)
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}
	maskNode(c.mask, doc)
	return doc, nil
}

// episodeNode builds one episode's mapping: id, match, response, delay,
// replay, agent.
func episodeNode(ep *Episode) (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	addStr(m, "id", ep.ID)
	if len(ep.Match) > 0 {
		if err := addValue(m, "match", ep.Match); err != nil {
			return nil, fmt.Errorf("episode %q: match: %w", ep.ID, err)
		}
	}
	addStrOpt(m, "request_hash", ep.RequestHash)
	r := ep.Response
	if r.HasData || r.Error != "" || r.InfraError != "" {
		rm := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if r.HasData {
			data := r.Data
			if data == nil {
				data = map[string]any{}
			}
			if err := addValue(rm, "data", data); err != nil {
				return nil, fmt.Errorf("episode %q: response.data: %w", ep.ID, err)
			}
		}
		addStrOpt(rm, "error", r.Error)
		addStrOpt(rm, "infra_error", r.InfraError)
		m.Content = append(m.Content, scalar("response"), rm)
	}
	if ep.DelayText != "" {
		addStr(m, "delay", ep.DelayText)
	} else if ep.Delay > 0 {
		addStr(m, "delay", ep.Delay.String())
	}
	if ep.Reusable {
		addStr(m, "replay", "any")
	}
	if ep.Agent != nil {
		if err := addValue(m, "agent", ep.Agent); err != nil {
			return nil, fmt.Errorf("episode %q: agent: %w", ep.ID, err)
		}
	}
	return m, nil
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func addStr(m *yaml.Node, k, v string) {
	n := &yaml.Node{}
	_ = n.Encode(v) // a string always encodes
	m.Content = append(m.Content, scalar(k), n)
}

func addStrOpt(m *yaml.Node, k, v string) {
	if v != "" {
		addStr(m, k, v)
	}
}

func addValue(m *yaml.Node, k string, v any) error {
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return err
	}
	m.Content = append(m.Content, scalar(k), n)
	return nil
}
