package host

import (
	"context"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// stepEpisode asks a replaying agent (the cassette transport) which
// recorded episode will answer. A cassette-backed call takes its call_id
// from the cassette key "<episode_id>:<match_idx>" under the cassette's
// app id (the story's when it names none), and its agent.call.start
// carries episode_id and match_idx. Other agents, and a replaying agent
// with no matching episode, leave the live call_id.
func (h *Host) stepEpisode(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	if sel, ok := c.agent.(agent.EpisodeSelector); ok {
		if ep, ok := sel.SelectEpisode(ctx, c.ac); ok {
			app := ep.AppID
			if app == "" {
				app = h.story.App.ID
			}
			c.req.CallID = trace.CallID(app, trace.CassetteCallKey(ep.ID, ep.MatchIdx))
			c.ep = ep
		}
	}
	return next(ctx, c)
}
