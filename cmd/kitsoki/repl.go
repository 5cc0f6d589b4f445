package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/view/tui"
)

// scripted runs the lines of in as scripted input (scriptLoop).
func (r *runner) scripted(ctx context.Context, in io.Reader) int { return scriptLoop(ctx, r, in) }

// said runs the --say texts (sayLoop).
func (r *runner) said(ctx context.Context, says []string) int { return sayLoop(ctx, r, says) }

// interactive is the terminal prompt (promptLoop).
func (r *runner) interactive(ctx context.Context, in *lines) int { return promptLoop(ctx, r, in) }

// The runner is the lineDriver of a session in this process.

func (r *runner) writers() (io.Writer, io.Writer) { return r.out, r.errw }

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

// say routes one free-text line and takes the turn it resolves to.
func (r *runner) say(ctx context.Context, text string) (int, bool) {
	if err := ctx.Err(); err != nil {
		fmt.Fprintln(r.errw, "kitsoki: interrupted")
		return exitFailure, true
	}
	out, err := r.sess.Say(ctx, text)
	if err != nil {
		fmt.Fprintln(r.errw, "kitsoki:", err)
		return exitFailure, true
	}
	return r.afterReplay(r.report(out))
}

func (r *runner) back(ctx context.Context) (int, bool, error) {
	out, err := r.sess.Back(ctx)
	if errors.Is(err, orchestrator.ErrNoHistory) {
		return exitOK, false, err
	}
	if err != nil {
		fmt.Fprintln(r.errw, "kitsoki:", err)
		return exitFailure, true, nil
	}
	code, stop := r.afterReplay(r.report(out))
	return code, stop, nil
}

func (r *runner) readWorld(context.Context) (map[string]any, error) { return r.sess.World(), nil }

func (r *runner) help() string { return promptHelp + "\n:quit      leave\n" + pluginHelp }

// command runs the prompt's plugin commands (:plugins, :enable, ...) and
// refuses any other `:word` in place, as the terminal UI does, instead
// of routing it as free text.
func (r *runner) command(ctx context.Context, line string) bool {
	switch line {
	case ":reload":
		r.reloadCommand(ctx)
		return true
	case ":reload plugins":
		line = ":reload"
	}
	if r.plugins.command(ctx, line, r.out, r.errw) {
		return true
	}
	if !strings.HasPrefix(line, ":") {
		return false
	}
	fmt.Fprintln(r.errw, "kitsoki:", tui.UnknownCommand(strings.Fields(line)[0], promptCommands()))
	return true
}

// settle lets the background jobs still running finish (or park on a
// question) and reports what they did; a job left waiting for an answer
// is cancelled when the run closes.
func (r *runner) settle(ctx context.Context) (int, bool) {
	jobs, err := r.sess.Settle(ctx)
	for _, out := range jobs {
		if code, stop := r.afterReplay(r.report(out)); stop {
			return code, true
		}
	}
	if err != nil {
		fmt.Fprintln(r.errw, "kitsoki:", err)
		return exitFailure, true
	}
	return exitOK, false
}

func (r *runner) current() string { return r.sess.State() }

func (r *runner) reloadRequested() bool { return r.reloading }

// describe prints the state's description and the intents it accepts.
func (r *runner) describe(context.Context) {
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
			if h := menuHint(def); h != "" {
				line += "  — " + h
			}
		}
		fmt.Fprintln(out, line)
	}
}

// menuHint is what a menu shows after an intent's name: its title:, its
// description:, or both as "title: description".
func menuHint(def *story.Intent) string {
	switch {
	case def.Title == "":
		return def.Description
	case def.Description == "":
		return def.Title
	}
	return def.Title + ": " + def.Description
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
