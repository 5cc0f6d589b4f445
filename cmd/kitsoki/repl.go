package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/orchestrator"
	"github.com/kitsoki/kitsoki/internal/story"
)

// scripted runs one intent or free-text line per non-blank input line ("#" starts a comment)
// and stops at the first rejection, fault, unhandled call failure or
// terminal state. A line that stops the run is named by its number.
func (r *runner) scripted(ctx context.Context, in io.Reader) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if skip, code := r.skipInput(line); skip {
			if code != exitOK {
				return code
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			fmt.Fprintf(r.errw, "kitsoki: input line %d: %q is a terminal command; scripted input takes one intent per line (run kitsoki on a terminal for :help, :intents, :world)\n", n, line)
			return exitFailure
		}
		if code, stop := r.turn(ctx, line); stop {
			if code != exitOK {
				fmt.Fprintf(r.errw, "kitsoki: stopped at input line %d: %s\n", n, line)
			}
			return code
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(r.errw, "kitsoki: reading input:", err)
		return exitFailure
	}
	// Background jobs still running finish (or park on a question) before
	// the run ends, and what they did is reported; a job left waiting for
	// an answer is cancelled when the run closes.
	jobs, err := r.sess.Settle(ctx)
	for _, out := range jobs {
		if code, stop := r.afterReplay(r.report(out)); stop {
			return code
		}
	}
	if err != nil {
		fmt.Fprintln(r.errw, "kitsoki:", err)
		return exitFailure
	}
	fmt.Fprintf(r.errw, "kitsoki: input ended in state %q, which is not terminal\n", r.sess.State())
	return exitIncomplete
}

// turn takes one line: free text is routed (Session.Say), a typed line
// "intent key=value ..." is parsed and taken.
func (r *runner) turn(ctx context.Context, line string) (int, bool) {
	if err := ctx.Err(); err != nil {
		fmt.Fprintln(r.errw, "kitsoki: interrupted")
		return exitFailure, true
	}
	if r.sess.IsFreeText(line) {
		out, err := r.sess.Say(ctx, line)
		if err != nil {
			fmt.Fprintln(r.errw, "kitsoki:", err)
			return exitFailure, true
		}
		return r.afterReplay(r.report(out))
	}
	intent, slots, err := r.sess.ParseInput(line)
	if err != nil {
		fmt.Fprintln(r.errw, "kitsoki:", err)
		return exitRejected, true
	}
	out, err := r.sess.Turn(ctx, intent, slots, line)
	if err != nil {
		fmt.Fprintln(r.errw, "kitsoki:", err)
		return exitFailure, true
	}
	return r.afterReplay(r.report(out))
}

// interactive is the terminal loop: it shows where the story is and what it
// accepts, and keeps going after rejections.
func (r *runner) interactive(ctx context.Context, in *lines) int {
	r.describe()
	for {
		fmt.Fprint(r.out, "> ")
		raw, ok, err := in.next(ctx)
		if err != nil {
			return exitFailure
		}
		if !ok {
			fmt.Fprintln(r.out)
			return exitIncomplete
		}
		line := strings.TrimSpace(raw)
		switch line {
		case "":
			continue
		case ":q", ":quit", ":exit":
			return exitIncomplete
		case ":help", "?":
			fmt.Fprintln(r.out, `Type an intent and its slots: intent key=value key2="two words"
:intents   what this state accepts     :world   the world as JSON
:state     where the story is          :back    return to the previous room
:quit      leave`)
			fmt.Fprintln(r.out, pluginHelp)
			continue
		case ":intents", ":state":
			r.describe()
			continue
		case ":world":
			b, _ := json.MarshalIndent(r.sess.World(), "", "  ")
			fmt.Fprintln(r.out, string(b))
			continue
		case ":back":
			out, err := r.sess.Back(ctx)
			if errors.Is(err, orchestrator.ErrNoHistory) {
				fmt.Fprintln(r.errw, "kitsoki:", err)
				continue
			}
			if err != nil {
				fmt.Fprintln(r.errw, "kitsoki:", err)
				return exitFailure
			}
			if code, stop := r.afterReplay(r.report(out)); stop && (code == exitOK || code == exitFailure) {
				return code
			}
			r.describe()
			continue
		}
		if r.plugins.command(ctx, line, r.out, r.errw) {
			continue
		}
		code, stop := r.turn(ctx, line)
		if ctx.Err() != nil {
			return exitFailure
		}
		if stop && (code == exitOK || code == exitFailure) {
			return code
		}
		r.describe()
	}
}

// describe prints the state's description and the intents it accepts.
func (r *runner) describe() {
	describeState(r.out, r.sess.Story(), r.sess.State(), r.sess.AllowedIntents(), r.sess.IntentDef)
}

// describeState prints a state's description and the allowed intents with
// their slots (def looks an intent's declaration up).
func describeState(out io.Writer, sty *story.Story, state string, allowed []string, intentDef func(string) *story.Intent) {
	st := sty.States[state]
	fmt.Fprintf(out, "\n[%s] %s\n", state, st.Description)
	for _, name := range allowed {
		def := intentDef(name)
		if def != nil && def.Hidden {
			continue
		}
		line := "  " + name
		if def != nil {
			var slots []string
			for _, sn := range def.SlotOrder {
				sl := def.Slots[sn]
				s := sn + "=<" + orDefault(sl.Type, "string") + ">"
				if len(sl.Values) > 0 {
					vals := make([]string, len(sl.Values))
					for i, v := range sl.Values {
						vals[i] = fmt.Sprint(v)
					}
					sort.Strings(vals)
					s = sn + "=" + strings.Join(vals, "|")
				}
				if !sl.Required {
					s = "[" + s + "]"
				}
				slots = append(slots, s)
			}
			if len(slots) > 0 {
				line += " " + strings.Join(slots, " ")
			}
			if def.Description != "" {
				line += "  — " + def.Description
			}
		}
		fmt.Fprintln(out, line)
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// lines reads input lines on one goroutine and hands them out in order, to
// the prompt loop or to an agent's question, whichever asks; a reader that
// gives up (its context ended) leaves the line for the next one.
type lines struct{ ch chan string }

func newLines(in io.Reader) *lines {
	l := &lines{ch: make(chan string)}
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

// next returns the next line; ok is false at the end of the input.
func (l *lines) next(ctx context.Context) (line string, ok bool, err error) {
	select {
	case line, ok = <-l.ch:
		return line, ok, nil
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
}

// terminalOperator asks the person at the terminal, between prompts.
func terminalOperator(in *lines, out io.Writer) func(ctx context.Context, question string) (string, error) {
	return func(ctx context.Context, question string) (string, error) {
		fmt.Fprintf(out, "\n[agent asks] %s\nanswer> ", question)
		a, ok, err := in.next(ctx)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("the operator closed the input")
		}
		return strings.TrimSpace(a), nil
	}
}
