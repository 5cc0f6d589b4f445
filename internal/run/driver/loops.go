package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// lineDriver is what the line protocol's loops (the terminal prompt,
// scripted input, --say) need of the session they drive. Console
// implements it over any Driver; the loops (prompt, reading, stopping,
// exit codes) are the same for every session.
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
	// command runs a prompt command of the front end's own; false: line
	// is not one.
	command(ctx context.Context, line string) bool
	// names are every `:` command the prompt knows, for the suggestion of
	// an unknown one.
	names() []string
	// skipInput skips a scripted input the session already took (it was
	// resumed or reattached); a code other than ExitOK stops the run.
	skipInput(ctx context.Context, line string) (skip bool, code int)
	// settle runs when scripted input ends: what the session still does
	// on its own (background jobs) is finished and reported.
	settle(ctx context.Context) (code int, stop bool)
	// current is the state the session is in.
	current() string
	// reload runs `:reload` of the story; false: this session cannot,
	// and command gets the line.
	reload(ctx context.Context) bool
	// reloadRequested says a :reload was taken: the loop ends and the
	// run starts again on the story as it is now.
	reloadRequested() bool
}

// promptHelp is the :help text every prompt shares; each adds its :quit
// line and commands.
const promptHelp = `Type an intent and its slots: intent key=value key2="two words"
:intents   what this state accepts     :world   the world as JSON
:state     where the story is          :back    return to the previous room`

// Builtin are the `:` commands every front end has (with :help's "?").
var Builtin = []string{":help", ":intents", ":state", ":world", ":back", ":quit"}

// isQuit reports whether line leaves the session.
func isQuit(line string) bool { return line == ":q" || line == ":quit" || line == ":exit" }

// promptLoop is the terminal loop: it shows where the story is and what
// it accepts, and keeps going after rejections. The end of the input
// (Ctrl-D) and :quit leave with ExitIncomplete; an interrupt (the context
// ended) with ExitFailure; a terminal state with ExitOK.
func promptLoop(ctx context.Context, d lineDriver, in *Lines) int {
	out, _ := d.writers()
	d.describe(ctx)
	for {
		fmt.Fprint(out, "> ")
		raw, ok, err := in.Next(ctx)
		if err != nil {
			return ExitFailure
		}
		if !ok {
			fmt.Fprintln(out)
			return ExitIncomplete
		}
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if isQuit(line) {
			return ExitIncomplete
		}
		r := runCommand(ctx, d, line)
		if r.handled && !r.turn {
			if d.reloadRequested() {
				return ExitOK
			}
			continue
		}
		code, stop := r.code, r.stop
		if !r.handled {
			code, stop = d.turn(ctx, line)
		}
		// A rejection, fault or failed call is shown and the prompt goes
		// on; a terminal state, an I/O failure or an interrupt ends it.
		if ctx.Err() != nil {
			return ExitFailure
		}
		if stop && (code == ExitOK || code == ExitFailure) {
			return code
		}
		d.describe(ctx)
	}
}

// commandResult is what runCommand did: handled is false for a line that
// is a turn; turn is set for a command that took one (:back), reported
// as a turn is, with code and stop.
type commandResult struct {
	handled, turn bool
	code          int
	stop          bool
}

// runCommand runs line when it is a `:` command (every line that starts
// with ':' is one, or "?"; :quit is the caller's).
func runCommand(ctx context.Context, d lineDriver, line string) commandResult {
	out, errw := d.writers()
	done := commandResult{handled: true}
	switch line {
	case ":help", "?":
		fmt.Fprintln(out, d.help())
		return done
	case ":intents", ":state":
		d.describe(ctx)
		return done
	case ":world":
		w, err := d.readWorld(ctx)
		if err != nil {
			fmt.Fprintln(errw, "kitsoki:", err)
			return done
		}
		b, _ := json.MarshalIndent(w, "", "  ")
		fmt.Fprintln(out, string(b))
		return done
	case ":back":
		code, stop, err := d.back(ctx)
		if err != nil {
			fmt.Fprintln(errw, "kitsoki:", err)
			return done
		}
		return commandResult{handled: true, turn: true, code: code, stop: stop}
	}
	if !strings.HasPrefix(line, ":") {
		return commandResult{}
	}
	if line == ":reload" && d.reload(ctx) {
		return done
	}
	if !d.command(ctx, line) {
		word, _, _ := strings.Cut(line, " ")
		fmt.Fprintln(errw, "kitsoki:", UnknownCommand(word, d.names()))
	}
	return done
}

// UnknownCommand is what every front end says of a `:` word it does not
// know, with the nearest command it does (at most 2 edits away).
func UnknownCommand(word string, names []string) string {
	msg := fmt.Sprintf("unknown command %s", word)
	if s := closest(word, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return msg + "; :help lists the commands"
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
			if code != ExitOK {
				return code
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			fmt.Fprintf(errw, "kitsoki: input line %d: %q is a terminal command; scripted input takes one intent per line (run kitsoki on a terminal for :help, :intents, :world)\n", n, line)
			return ExitFailure
		}
		if code, stop := d.turn(ctx, line); stop {
			if code != ExitOK {
				fmt.Fprintf(errw, "kitsoki: stopped at input line %d: %s\n", n, line)
			}
			return code
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(errw, "kitsoki: reading input:", err)
		return ExitFailure
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
			if code != ExitOK {
				return code
			}
			continue
		}
		if code, stop := d.say(ctx, text); stop {
			if code != ExitOK {
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
	return ExitIncomplete
}

// Lines reads input lines on one goroutine and hands them out in order, to
// the prompt loop or to an agent's question, whichever asks; a reader that
// gives up (its context ended) leaves the line for the next one.
type Lines struct{ ch chan string }

// NewLines starts reading in.
func NewLines(in io.Reader) *Lines {
	l := &Lines{ch: make(chan string)}
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			l.ch <- sc.Text()
		}
		close(l.ch)
	}()
	return l
}

// Next returns the next line; ok is false at the end of the input.
func (l *Lines) Next(ctx context.Context) (line string, ok bool, err error) {
	select {
	case line, ok = <-l.ch:
		return line, ok, nil
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
}

// TerminalOperator asks the person at the terminal, between prompts.
func TerminalOperator(in *Lines, out io.Writer) func(ctx context.Context, question string) (string, error) {
	return func(ctx context.Context, question string) (string, error) {
		fmt.Fprintf(out, "\n[agent asks] %s\nanswer> ", question)
		a, ok, err := in.Next(ctx)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("the operator closed the input")
		}
		return strings.TrimSpace(a), nil
	}
}
