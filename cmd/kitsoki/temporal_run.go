package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/driver/remote"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// localOnlyRunFlags are kitsoki run's flags that have no meaning for a
// session on the cluster, with what to do instead.
var localOnlyRunFlags = []struct{ name, instead string }{
	{"trace", "the trace is in the session's workflow: kitsoki session trace ID --temporal HOST:PORT -o FILE writes it"},
	{"trace-sync", "the session's history is Temporal's"},
	{"durability", "the session's history is Temporal's"},
	{"continue", "reattach with --session ID (kitsoki session list --temporal HOST:PORT shows the sessions)"},
	{"fork", "start a new session"},
	{"resume-side-effects", "a call lost with its worker is the worker's to re-issue"},
	{"sessions-dir", "the sessions are on the cluster"},
	{"cassette", "give it to the workers: kitsoki worker --cassette FILE"},
	{"cassette-strict", "the workers replay cassettes"},
	{"record", "the workers run the agents"},
	{"http-cassette", "the workers run host.starlark.run"},
	{"agent-timeout", "give it to the workers: kitsoki worker --agent-timeout D"},
	{"tool-provider", "the workers make the calls"},
	{"autopilot", "agents in a Temporal session are not offered the operator tool"},
	{"control-mcp", "plugins run on the workers"},
	{"strict-pins", "the workers apply the story's pins"},
	{"mode", "a Temporal session runs one_shot"},
	{"otlp", "export from the workers' traces"},
	{"otlp-content", "export from the workers' traces"},
	{"profile", "the workers make the agent calls (profiles apply to the runs kitsoki run drives in its own process)"},
	{"agent", "the workers make the agent calls (profiles apply to the runs kitsoki run drives in its own process)"},
	{"max-cost", "the workers make the agent calls"},
}

// runOnCluster is kitsoki run --temporal: the session is a workflow on
// the cluster; this process starts it (or reattaches to it with
// --session ID) and drives it as a local run is driven, printing the same
// says, views and errors and exiting with the same codes.
func runOnCluster(cmd *cobra.Command, g *globals, o *runOpts, path string) (err error) {
	for _, f := range localOnlyRunFlags {
		if fl := cmd.Flags().Lookup(f.name); fl != nil && fl.Changed {
			return exitWith(exitUsage, fmt.Errorf("--%s does not apply with --temporal: %s", f.name, f.instead))
		}
	}
	if o.intents != "" && len(o.say) > 0 {
		return exitWith(exitUsage, errors.New("--say and --intents cannot be combined: give the turns as one of them (a free-text line on stdin works too)"))
	}
	st, err := story.Load(path, g.storyOpts()...)
	if err != nil {
		return exitWith(exitLoad, err)
	}
	defer st.Close()
	defer func() { err = maskedExit(st.Secrets, err) }()
	stdout, stderr := redacting(cmd.OutOrStdout(), st.Secrets), redacting(cmd.ErrOrStderr(), st.Secrets)
	logger := g.logger(stderr)
	for _, w := range st.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w.String())
	}
	world, err := parseWorldFlags(st, o.world)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	rc, err := o.routing.config(cmd, st)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	// --stories names the workers' stories directory: the session names
	// its story by its path there. Without it the story travels with the
	// session, as a bundle in the blob store the workers run.
	var ref cluster.StoryRef
	if cmd.Flags().Changed("stories") {
		if ref, err = cluster.PathRef(o.tf.stories, story.RootFile(path), st); err != nil { // a story directory: its app.yaml
			return exitWith(exitUsage, err)
		}
	}
	if o.session != "" {
		if err := session.CheckID(o.session); err != nil {
			return exitWith(exitUsage, err)
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := o.tf.dial(ctx, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	if ref.Path == "" {
		// The story travels with the session: its files go to the blob
		// store as a bundle the workers run, so no worker needs a copy.
		if ref, err = cluster.PackStory(path, st, o.tf.blobStore(), o.tf.stories, g.storyOpts()...); err != nil {
			return exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
		}
	}
	d, err := remote.Open(ctx, c, remote.Request{Story: st, Ref: ref, ID: o.session, World: world, Root: o.root, Routing: rc, Stderr: stderr})
	if err != nil {
		return err
	}
	defer d.Close()
	con := &driver.Console{D: d, Out: stdout, Err: stderr, Extra: clusterCommands{}, QuitHelp: "leave (the session goes on on the cluster)"}
	code, stopNow := con.Begin(ctx)
	if !stopNow {
		switch {
		case o.intents != "":
			code = con.Script(ctx, strings.NewReader(strings.ReplaceAll(o.intents, ",", "\n")))
		case len(o.say) > 0:
			code = con.Say(ctx, o.say)
		case isTerminal(cmd.InOrStdin()):
			code = con.Prompt(ctx, driver.NewLines(cmd.InOrStdin()))
		default:
			code = con.Script(ctx, cmd.InOrStdin())
		}
		if !d.Done() && code != exitOK {
			fmt.Fprintf(stderr, "kitsoki: session %s goes on on the cluster; reattach with kitsoki run %s --temporal %s --session %s\n", d.ID(), path, c.HostPort(), d.ID())
		}
	}
	return exitCode(code)
}

// clusterCommands are the prompt's commands of a local run that need the
// session in this process (the plugin commands and the live agent
// switches): on the cluster they are refused, naming the command.
type clusterCommands struct{}

func (clusterCommands) Names() []string { return localCommands(nil, nil).Names() }
func (clusterCommands) Help() string    { return "" }

func (clusterCommands) Run(_ context.Context, line string, _, errw io.Writer) bool {
	word, _, _ := strings.Cut(line, " ")
	if !slices.Contains(clusterCommands{}.Names(), word) {
		return false
	}
	fmt.Fprintf(errw, "kitsoki: %s is not available in a session on the cluster (:help lists the commands)\n", word)
	return true
}
