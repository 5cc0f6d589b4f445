package cassette

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// recordMiss answers a new_episodes miss with the live agent and appends
// the exchange.
func (a *cassetteAgent) recordMiss(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	resp, err := a.live.Ask(ctx, call)
	a.c.Append(AgentEpisode(ctx, a.alias, a.c.Phase(call.Request.StatePath), call, resp, err))
	return resp, err
}

// appendedComment heads the episodes a new_episodes run appends.
const appendedComment = "appended by KITSOKI_CASSETTE_RECORD"

// Append adds a recorded episode (already played) and, for a
// cassette loaded from a file, rewrites the file with the episode appended
// under the "appended by KITSOKI_CASSETTE_RECORD" comment. A write failure
// is kept for WriteErr; the live answer is returned regardless.
func (c *Cassette) Append(ep *Episode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ep.ID = UniqueID(ep.ID, func(id string) bool {
		for _, e := range c.Episodes {
			if e.ID == id {
				return true
			}
		}
		return false
	})
	if err := ep.prepare(); err != nil {
		c.keepWriteErr(err)
		return
	}
	c.Episodes = append(c.Episodes, ep)
	c.plays = append(c.plays, 1)
	if c.Path == "" {
		return
	}
	if err := c.appendToFile(ep); err != nil {
		c.keepWriteErr(fmt.Errorf("cassette: %q: appending episode %q: %w", c.Path, ep.ID, err))
	}
}

func (c *Cassette) keepWriteErr(err error) {
	if c.writeErr == nil {
		c.writeErr = err
	}
}

// WriteErr is the first failure to append a recorded episode to the
// cassette file, if any.
func (c *Cassette) WriteErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeErr
}

// appendToFile adds the episode to the parsed document (includes kept as
// written) and rewrites the file.
func (c *Cassette) appendToFile(ep *Episode) error {
	if c.doc == nil || len(c.doc.Content) == 0 {
		doc, err := c.node()
		if err != nil {
			return err
		}
		if seq := doc.Content[0].Content[len(doc.Content[0].Content)-1]; !c.appended && len(seq.Content) > 0 {
			seq.Content[len(seq.Content)-1].HeadComment = appendedComment
		}
		c.doc = doc
	} else {
		n, err := episodeNode(ep)
		if err != nil {
			return err
		}
		maskNode(c.mask, n)
		if !c.appended {
			n.HeadComment = appendedComment
		}
		top := c.doc.Content[0]
		var seq *yaml.Node
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value == "episodes" {
				seq = top.Content[i+1]
			}
		}
		if seq == nil {
			seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			top.Content = append(top.Content, scalar("episodes"), seq)
		}
		if seq.Kind != yaml.SequenceNode { // "episodes:" with no value
			*seq = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		}
		seq.Style = 0
		seq.Content = append(seq.Content, n)
	}
	c.appended = true
	b, err := encodeNode(c.doc)
	if err != nil {
		return err
	}
	return WriteFileAtomic(c.Path, b)
}
