package host

import (
	"context"
	"time"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// stepCallID starts the call's clock and gives the request its live
// call_id, derived from the seq its agent.call.start will get (the spec's
// formula), and its deadline: the start plus the call's timeout.
func (h *Host) stepCallID(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	c.start = h.clock.Now()
	seq := c.call.SinkOr(h.sink).NextSeq(c.call.Turn)
	c.req.CallID = trace.CallID(h.story.App.ID, trace.LiveCallKey(c.call.Turn, c.call.State, seq))
	c.req.Deadline = c.start.Add(c.timeout).UTC().Format(time.RFC3339Nano)
	return next(ctx, c)
}
