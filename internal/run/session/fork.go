package session

import (
	"fmt"
	"maps"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// Fork writes a new journal at dst holding src's turns 0 to at (their
// events as written, each turn's earlier attempts included) and a snapshot
// of where turn at left the session, under a new header (hdr names the new
// session and the story it will run on). src is left as it is. at must be
// a finished turn of src.
func Fork(src string, at int64, dst string, hdr trace.HeaderInfo, opts ...trace.Option) (*Journal, error) {
	if at < 0 {
		return nil, fmt.Errorf("fork: --at-turn %d: turns count from 0", at)
	}
	j, evs, err := ReadAll(src, at)
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	last := int64(-1)
	if j.Started {
		last = j.Turn
	}
	if last < at || (j.Partial != nil && j.Partial.Turn <= at) {
		if last < 0 {
			return nil, fmt.Errorf("fork: turn %d: the session has no finished turn to fork from", at)
		}
		return nil, fmt.Errorf("fork: turn %d did not finish in %s (the last finished turn is %d): fork at turn %d or earlier", at, src, last, last)
	}
	if hdr.ForkedAtTurn == 0 {
		hdr.ForkedAtTurn = at
	}
	w, err := trace.Create(dst, append(opts, trace.WithHeader(hdr))...)
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	for i := range evs {
		if evs[i].Turn > at {
			break
		}
		ev := evs[i]
		if err := w.Append(&ev); err != nil {
			w.Close()
			return nil, fmt.Errorf("fork: %w", err)
		}
	}
	p := trace.Snapshot{State: j.State, Turn: at, World: maps.Clone(j.World), StoryHash: hdr.StoryHash, Done: j.Done}
	if j.Done {
		p.Exit = j.Exit
	}
	if err := w.AppendPayload(&plugin.Event{Turn: at, StatePath: j.State}, p); err != nil {
		w.Close()
		return nil, fmt.Errorf("fork: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	return Load(dst)
}
