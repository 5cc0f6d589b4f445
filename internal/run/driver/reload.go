package driver

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

// Reloader checks that the story at Path can take over the session.
type Reloader struct {
	Path    string         // the story as typed
	Opts    []story.Option // how it was loaded
	Current *story.Story   // the story the session runs now
	Session string         // the session's id
	Journal string         // its trace
	// Flags, when set, checks the run's command line against the new
	// story (--world values its world declares, a --profile it can
	// take): a reload the restarted run would refuse is refused here,
	// and the session goes on.
	Flags func(next *story.Story) error
}

// Check loads the story again and replays the session's journal into it.
func (l *Reloader) Check(ctx context.Context) error {
	next, err := story.Load(l.Path, l.Opts...)
	if err != nil {
		return err
	}
	defer next.Close()
	if l.Flags != nil {
		if err := l.Flags(next); err != nil {
			return err
		}
	}
	if next.ContentHash == l.Current.ContentHash {
		return nil
	}
	_, evs, err := session.ReadAll(l.Journal, -1)
	if err != nil {
		return err
	}
	div, _, err := runtime.CheckJournal(ctx, next, l.Session, evs)
	if div != nil {
		return fmt.Errorf("the story as it is now decides differently: %s", div.Error())
	}
	return err
}

// reload runs `:reload` when the console can reload its story (false:
// it cannot, and the front end's own commands get the line). On success
// Reloading is set and the loop that reads lines ends.
func (c *Console) reload(ctx context.Context) bool {
	if c.Reload == nil {
		return false
	}
	if err := c.Reload.Check(ctx); err != nil {
		fmt.Fprintf(c.Err, "kitsoki: reload refused; the session goes on in the story as it was:\n%v\n", err)
		return true
	}
	fmt.Fprintf(c.Out, "reloading %s: session %s goes on in the story as it is now\n", c.Reload.Path, c.Reload.Session)
	c.Reloading = true
	return true
}

func (c *Console) reloadRequested() bool { return c.Reloading }
