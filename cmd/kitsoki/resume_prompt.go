package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// offerResume asks, on a terminal, whether to resume the story's latest
// unfinished session, before the terminal UI or the plain prompt starts.
// It asks only when nothing on the command line picks the session
// (--continue, --session, --trace) and the input is a person's (no
// --intents, no --say). A yes sets --continue; a no, or the end of the
// input, starts a new session.
func (f *sessionFlags) offerResume(o *runOpts, st *story.Story, in io.Reader, out io.Writer) error {
	if f.resumeLatest || o.session != "" || o.trace != "" || o.intents != "" || len(o.say) > 0 || !isTerminal(in) {
		return nil
	}
	store := session.Store{Dir: sessionsDir(f.dir, st.Workspace.Dir())}
	m, found, err := store.Latest(st.File)
	if err != nil || !found {
		return err
	}
	fmt.Fprintf(out, "kitsoki: session %s of this story stopped in state %q after turn %d (%s).\n",
		m.ID, m.State, m.Turn, m.Updated.Local().Format(time.DateTime))
	for {
		fmt.Fprint(out, "Resume it? [Y/n] ")
		line, ok := readLine(in)
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "y", "yes":
			if !ok && line == "" {
				fmt.Fprintln(out)
				return nil // the input ended: a new session
			}
			f.resumeLatest = true
			return nil
		case "n", "no":
			return nil
		}
		if !ok {
			fmt.Fprintln(out)
			return nil
		}
		fmt.Fprintln(out, "answer y (resume it) or n (start a new session)")
	}
}

// readLine reads one line a byte at a time, so nothing after it is taken
// from the input the UI or the prompt reads next. ok is false when the
// input ended (or failed) first.
func readLine(in io.Reader) (string, bool) {
	var b strings.Builder
	one := make([]byte, 1)
	for {
		n, err := in.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				return strings.TrimSuffix(b.String(), "\r"), true
			}
			b.WriteByte(one[0])
		}
		if err != nil {
			return b.String(), false
		}
	}
}
