package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// lineDriver is what the line protocol's loops (the terminal prompt,
// scripted input, --say) need of the session they drive. *runner drives
// a session in this process, *remoteDriver one on a Temporal cluster; the
// loops (prompt, reading, stopping, exit codes) are the same for both.
type lineDriver interface {
	// writers are the run's stdout and stderr.
	writers() (out, errw io.Writer)
	// describe prints the state and the intents it accepts.
	describe(ctx context.Context)
	// turn takes one input line (free text is routed, "intent key=value
	// ..." is taken as typed), prints what happened and says whether the
	// run stops, with which exit code.
	turn(ctx context.Context, line string) (code int, stop bool)
	// say takes one line as free text (--say), as turn does.
	say(ctx context.Context, text string) (code int, stop bool)
	// back returns to the previous room and reports it as turn does; err
	// (orchestrator.ErrNoHistory) says there was none: nothing was taken
	// or printed.
	back(ctx context.Context) (code int, stop bool, err error)
	// readWorld is the session's world (:world).
	readWorld(ctx context.Context) (map[string]any, error)
	// help is the prompt's :help text.
	help() string
	// command runs a prompt command of the driver's own; false: line is
	// not one, and is taken as a turn.
	command(ctx context.Context, line string) bool
	// skipInput skips a scripted input the session already took (it was
	// resumed or reattached); a code other than exitOK stops the run.
	skipInput(ctx context.Context, line string) (skip bool, code int)
	// settle runs when scripted input ends: what the session still does
	// on its own (background jobs) is finished and reported.
	settle(ctx context.Context) (code int, stop bool)
	// current is the state the session is in.
	current() string
	// reloadRequested says a :reload was taken: the loop ends and the
	// run starts again on the story as it is now.
	reloadRequested() bool
}

// promptHelp is the :help text both drivers share; each adds its :quit
// line and commands.
const promptHelp = `Type an intent and its slots: intent key=value key2="two words"
:intents   what this state accepts     :world   the world as JSON
:state     where the story is          :back    return to the previous room`

// promptCommands are the `:` commands of a local run, at the plain prompt
// and in the terminal UI alike (the UI adds nothing of its own but the
// world viewer behind :world).
func promptCommands() []string {
	return []string{":help", ":intents", ":state", ":world", ":back", ":quit", ":plugins", ":enable", ":disable", ":reload"}
}

// promptLoop is the terminal loop: it shows where the story is and what
// it accepts, and keeps going after rejections. The end of the input
// (Ctrl-D) and :quit leave with exitIncomplete; an interrupt (the context
// ended) with exitFailure; a terminal state with exitOK.
func promptLoop(ctx context.Context, d lineDriver, in *lines) int {
	out, errw := d.writers()
	d.describe(ctx)
	for {
		fmt.Fprint(out, "> ")
		raw, ok, err := in.next(ctx)
		if err != nil {
			return exitFailure
		}
		if !ok {
			fmt.Fprintln(out)
			return exitIncomplete
		}
		line := strings.TrimSpace(raw)
		var code int
		var stop bool
		switch line {
		case "":
			continue
		case ":q", ":quit", ":exit":
			return exitIncomplete
		case ":help", "?":
			fmt.Fprintln(out, d.help())
			continue
		case ":intents", ":state":
			d.describe(ctx)
			continue
		case ":world":
			w, err := d.readWorld(ctx)
			if err != nil {
				fmt.Fprintln(errw, "kitsoki:", err)
				continue
			}
			b, _ := json.MarshalIndent(w, "", "  ")
			fmt.Fprintln(out, string(b))
			continue
		case ":back":
			code, stop, err = d.back(ctx)
			if err != nil {
				fmt.Fprintln(errw, "kitsoki:", err)
				continue
			}
		default:
			if d.command(ctx, line) {
				if d.reloadRequested() {
					return exitOK
				}
				continue
			}
			code, stop = d.turn(ctx, line)
		}
		// A rejection, fault or failed call is shown and the prompt goes
		// on; a terminal state, an I/O failure or an interrupt ends it.
		if ctx.Err() != nil {
			return exitFailure
		}
		if stop && (code == exitOK || code == exitFailure) {
			return code
		}
		d.describe(ctx)
	}
}

// scriptLoop runs one intent or free-text line per non-blank input line
// ("#" starts a comment) and stops at the first rejection, fault,
// unhandled call failure or terminal state. A line that stops the run is
// named by its number.
func scriptLoop(ctx context.Context, d lineDriver, in io.Reader) int {
	_, errw := d.writers()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if skip, code := d.skipInput(ctx, line); skip {
			if code != exitOK {
				return code
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			fmt.Fprintf(errw, "kitsoki: input line %d: %q is a terminal command; scripted input takes one intent per line (run kitsoki on a terminal for :help, :intents, :world)\n", n, line)
			return exitFailure
		}
		if code, stop := d.turn(ctx, line); stop {
			if code != exitOK {
				fmt.Fprintf(errw, "kitsoki: stopped at input line %d: %s\n", n, line)
			}
			return code
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(errw, "kitsoki: reading input:", err)
		return exitFailure
	}
	return inputEnded(ctx, d)
}

// sayLoop runs the --say texts in order, each as a free-text turn, and
// stops as scriptLoop does, naming the --say (its place among the flags)
// that stopped the run.
func sayLoop(ctx context.Context, d lineDriver, says []string) int {
	_, errw := d.writers()
	for i, text := range says {
		if skip, code := d.skipInput(ctx, strings.TrimSpace(text)); skip {
			if code != exitOK {
				return code
			}
			continue
		}
		if code, stop := d.say(ctx, text); stop {
			if code != exitOK {
				fmt.Fprintf(errw, "kitsoki: stopped at --say %d: %s\n", i+1, text)
			}
			return code
		}
	}
	return inputEnded(ctx, d)
}

// inputEnded ends scripted input: the session settles, and a session
// still not in a terminal state is incomplete.
func inputEnded(ctx context.Context, d lineDriver) int {
	if code, stop := d.settle(ctx); stop {
		return code
	}
	_, errw := d.writers()
	fmt.Fprintf(errw, "kitsoki: input ended in state %q, which is not terminal\n", d.current())
	return exitIncomplete
}
