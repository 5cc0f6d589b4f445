package agent

import "context"

// Episode names the recorded episode that answers an agent call: the
// cassette transport's answer to "which recording will reply?".
type Episode struct {
	// ID is the episode's id in the cassette.
	ID string
	// MatchIdx is how many times the episode played before this call: 0
	// unless the episode is reusable (replay: any).
	MatchIdx int
	// AppID is the cassette's app_id, which the call_id is derived from;
	// "" means the story's app id.
	AppID string
}

// EpisodeSelector is implemented by agents that replay recorded episodes
// (the cassette transport). The host calls SelectEpisode before it writes
// agent.call.start, so that event can carry episode_id and match_idx and
// the call_id can be derived from the cassette key "<episode_id>:<match_idx>"
// (trace-format.md §7). The selected episode is reserved for the Ask that
// follows with the same *Call. ok=false means no episode matches: the call
// keeps its live call_id and Ask reports the miss.
type EpisodeSelector interface {
	SelectEpisode(ctx context.Context, call *Call) (ep Episode, ok bool)
}
