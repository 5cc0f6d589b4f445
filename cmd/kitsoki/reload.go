package main

import (
	"context"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// A story reload (`:reload` at the plain prompt and in the terminal UI)
// ends the run and starts it again on the story as it is on disk,
// resuming the same session from its journal, as `--session ID` does:
// the turns taken so far replay into the new story. It is refused, and
// the session goes on in the story as it was, when the story no longer
// loads or when the new story decides one of those turns differently
// (the nondeterminism check of a resume).

// storyReloader checks that the story at path can take over the session.
type storyReloader struct {
	path    string
	opts    []story.Option
	current *story.Story
	session string // the session's id
	journal string // its trace
}

// check loads the story again and replays the session's journal into it.
func (l *storyReloader) check(ctx context.Context) error {
	next, err := story.Load(l.path, l.opts...)
	if err != nil {
		return err
	}
	defer next.Close()
	if next.ContentHash == l.current.ContentHash {
		return nil
	}
	_, evs, err := session.ReadAll(l.journal, -1)
	if err != nil {
		return err
	}
	div, _, err := runtime.CheckJournal(ctx, next, l.session, evs)
	if div != nil {
		return fmt.Errorf("the story as it is now decides differently: %s", div.Error())
	}
	return err
}

// reloadCommand runs `:reload`: on success the run is marked to start
// again (runner.reloading) and the loop that reads lines ends.
func (r *runner) reloadCommand(ctx context.Context) {
	if r.reloader == nil {
		fmt.Fprintln(r.errw, "kitsoki: this run cannot reload its story")
		return
	}
	if err := r.reloader.check(ctx); err != nil {
		fmt.Fprintf(r.errw, "kitsoki: reload refused; the session goes on in the story as it was:\n%v\n", err)
		return
	}
	fmt.Fprintf(r.out, "reloading %s: session %s goes on in the story as it is now\n", r.reloader.path, r.reloader.session)
	r.reloading = true
}
