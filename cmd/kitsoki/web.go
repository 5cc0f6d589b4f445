package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/starlark"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/internal/view/viz"
	"github.com/kitsoki/kitsoki/internal/view/web"
)

// webOpts are kitsoki web's flags.
type webOpts struct {
	addr          string
	sessionsDir   string
	cassettes     []string
	httpCassettes []string
	debug         bool
	newToken      bool
	timeout       time.Duration
	maxLive       int
}

// defaultWebAddr is where kitsoki web listens unless --addr says.
const defaultWebAddr = "127.0.0.1:7700"

func newWebCmd(g *globals) *cobra.Command {
	o := &webOpts{}
	cmd := &cobra.Command{
		Use:   "web [STORY_DIR...]",
		Short: "Play, watch and debug stories in the browser",
		Long: `Serve a web UI for stories on 127.0.0.1 and print its address, which
carries the server's token (kept in the sessions directory, so a restarted
server takes the pages it served; --new-token makes a new one).

The stories are the STORY_DIRs given (a directory holding app.yaml, a story's
app.yaml, or a directory of stories NAME/app.yaml), else the story_dirs of
the project's .kitsoki.yaml, else the current directory. The home page lists
them with their sessions: start one, open (resume) one, fork one. A session
page shows the transcript, the state's view (choices as buttons and forms),
the intents as buttons with slot forms, a box for an intent line or free text
(routed as kitsoki run routes it), the calls in flight with a Cancel button,
the state diagram with the current state and the path taken, the trace, the
world (editable with --debug) and the story's eval reports.

Sessions are durable, in the sessions directory (--sessions-dir, else
$KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the workspace), as with
kitsoki run: a page reloaded after a restart goes on where the session was.
--cassette FILE replays a cassette in place of a story's agents and hosts
(the story whose app id the cassette names; repeat the flag for several
stories), --http-cassette [APP_ID=]FILE serves host.starlark.run's HTTP from
one. Ctrl-C stops the server; the sessions it held are saved.

Every request needs the token; over loopback the Host and Origin must be
loopback names. --addr may name another interface (a warning is printed:
anyone who reaches it with the token drives your sessions). See docs/web.md.`,
		RunE: func(cmd *cobra.Command, args []string) error { return runWeb(cmd, g, o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", defaultWebAddr, "the address to listen on (127.0.0.1:0 picks a free port)")
	f.StringVar(&o.sessionsDir, "sessions-dir", "", "where sessions are kept (default $"+session.EnvDir+", else .kitsoki/sessions in the workspace)")
	f.StringArrayVar(&o.cassettes, "cassette", nil, "replay this cassette in place of the agents of the story its app_id names (repeatable)")
	f.StringArrayVar(&o.httpCassettes, "http-cassette", nil, "serve host.starlark.run's HTTP from this cassette: [APP_ID=]FILE (APP_ID is needed when several stories are served; repeatable)")
	f.BoolVar(&o.debug, "debug", false, "let the page edit the world (applied at the start of the next turn)")
	f.BoolVar(&o.newToken, "new-token", false, "make a new token (pages holding the old one are refused)")
	f.DurationVar(&o.timeout, "agent-timeout", host.DefaultTimeout, "hard deadline of an agent call that sets no with.timeout")
	f.IntVar(&o.maxLive, "max-live", 64, "sessions kept open at once (the least recently used one no page follows is closed first)")
	addWorkspaceFlag(cmd, g)
	return cmd
}

func runWeb(cmd *cobra.Command, g *globals, o *webOpts, args []string) error {
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("kitsoki web: --addr %q: %w (want host:port, e.g. 127.0.0.1:7700)", o.addr, err))
	}
	cwd, err := os.Getwd()
	if err != nil {
		return exitWith(exitFailure, err)
	}
	files, err := web.Discover(args, cwd)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("kitsoki web: %w", err))
	}
	stderr := cmd.ErrOrStderr()
	replays, err := webCassettes(files, o)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("kitsoki web: %w", err))
	}
	root, err := workspaceDir(g)
	if err != nil && o.sessionsDir == "" {
		return exitWith(exitFailure, err)
	}
	dir := o.sessionsDir // with no workspace, media files are read in the story's directory only
	if dir == "" {
		dir = sessionsDir("", root)
	}
	token, err := web.Token(dir, o.newToken)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	logger := g.logger(stderr)
	sessions := &driver.Sessions{Store: session.Store{Dir: dir}, Load: replays.load(g), Config: replays.config(o, logger), Stderr: stderr}
	cfg := web.Config{Stories: files, Sessions: sessions, Token: token, Debug: o.debug, Logger: logger, MaxLive: o.maxLive, Workspace: root}
	if helper, err := viz.FindHelper(); err == nil {
		cfg.Render = viz.HelperRender(helper)
	} else {
		fmt.Fprintf(stderr, "kitsoki web: the state diagram is shown as a list only: %v\n", err)
	}
	srv, err := web.New(cfg)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "kitsoki web: warning: --addr %s is not a loopback address: anyone who reaches it with the token drives your sessions\n", o.addr)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki web: %w (--addr 127.0.0.1:0 picks a free port)", err))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(cmd.OutOrStdout(), "kitsoki: serving %d stor%s at %s (Ctrl-C stops)\n", len(files), map[bool]string{true: "y", false: "ies"}[len(files) == 1], srv.URL(ln.Addr()))
	fmt.Fprintf(stderr, "kitsoki web: sessions in %s\n", dir)
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return exitWith(exitFailure, fmt.Errorf("kitsoki web: %w", err))
	}
	return nil
}

// webReplays are the cassettes of kitsoki web, by story root file.
type webReplays struct {
	host map[string]string // story file → host cassette
	http map[string]string // story file → HTTP cassette
}

// webCassettes matches each --cassette to the story whose app id it names
// (the only story, when one is served) and each --http-cassette to the
// story its APP_ID= names.
func webCassettes(files []string, o *webOpts) (*webReplays, error) {
	r := &webReplays{host: map[string]string{}, http: map[string]string{}}
	ids := map[string]string{} // app id → story file
	for _, f := range files {
		if st, err := story.Load(f, story.WithStubbedHosts(), story.WithoutSecrets()); err == nil {
			ids[st.App.ID] = f
			st.Close()
		}
	}
	pick := func(flag, app, path string) (string, error) {
		if f, ok := ids[app]; ok && app != "" {
			return f, nil
		}
		if len(files) == 1 && app == "" {
			return files[0], nil
		}
		if app == "" {
			return "", fmt.Errorf("%s %s: several stories are served; say which (the cassette's app_id, or APP_ID=FILE)", flag, path)
		}
		return "", fmt.Errorf("%s %s: no story served has app id %q", flag, path, app)
	}
	for _, p := range o.cassettes {
		c, err := cassette.Load(p)
		if err != nil {
			return nil, fmt.Errorf("--cassette: %w", err)
		}
		app := c.AppID
		if _, ok := ids[app]; !ok && len(files) == 1 {
			app = ""
		}
		f, err := pick("--cassette", app, p)
		if err != nil {
			return nil, err
		}
		r.host[f] = absPath(p)
	}
	for _, spec := range o.httpCassettes {
		app, p, ok := strings.Cut(spec, "=")
		if !ok {
			app, p = "", spec
		}
		if _, err := starlark.LoadCassette(p, ""); err != nil {
			return nil, fmt.Errorf("--http-cassette: %w", err)
		}
		f, err := pick("--http-cassette", app, p)
		if err != nil {
			return nil, err
		}
		r.http[f] = absPath(p)
	}
	return r, nil
}

// load loads a story for a session: the handlers its cassette answers
// count as provided.
func (r *webReplays) load(g *globals) func(path string) (*story.Story, error) {
	return func(path string) (*story.Story, error) {
		opts := g.storyOpts()
		if c := r.host[filepath.Clean(path)]; c != "" {
			opts = append(opts, story.WithReplayedHandlers(replay.HandlerNames(c)...))
		}
		return story.Load(path, opts...)
	}
}

// config is a session's runtime configuration: live agents, or the
// story's cassettes, each session replaying its own copy.
func (r *webReplays) config(o *webOpts, logger *slog.Logger) func(st *story.Story) (runtime.Config, func() error, error) {
	return func(st *story.Story) (runtime.Config, func() error, error) {
		cfg := runtime.Config{Logger: logger, Agents: runtime.Agents{Live: true}, Timeout: o.timeout,
			Tools:      runtime.Tools{Plugins: true, Autopilot: true},
			PinWarning: func(w string) { logger.Warn("selection pin not honoured", "detail", w) }}
		if p := r.host[st.File]; p != "" {
			c, err := replay.Load(p, cassette.WithSecrets(st.Secrets))
			if err != nil {
				return cfg, nil, err
			}
			cfg.Cassette = c
		}
		var done func() error
		if p := r.http[st.File]; p != "" {
			c, err := starlark.LoadCassette(p, os.Getenv(httpRecordEnv))
			if err != nil {
				return cfg, nil, err
			}
			cfg.Starlark.HTTP = c.Client(nil)
			done = func() error { return c.Save(secret.New(st.Secrets)) }
		}
		return cfg, done, nil
	}
}
