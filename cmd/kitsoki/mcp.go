package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/base/mcpguard"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
	"github.com/spf13/cobra"
)

func newMCPCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "kitsoki's MCP server for outside clients"}
	var o mcpserve.ServeOptions
	var sessionsFlag string
	var maxSessions int
	var tf temporalFlags
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the configuration or external surface over stdio or HTTP",
		Long: `Serve kitsoki's MCP tools to an outside MCP client.

--surface configuration (default) inspects and validates stories, plugin
declarations and schemas under --root; --surface external adds starting a
run and the session tools (session_new_kitsoki, session_submit_kitsoki,
session_continue_kitsoki, session_inspect_kitsoki, session_render_kitsoki,
session_trace_kitsoki, session_list_kitsoki, session_fork_kitsoki,
session_delete_kitsoki) over the sessions directory (--sessions-dir, else
$KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the workspace of --root).
At most --max-live-sessions sessions are live at once: opening one more closes
the least recently used idle one (it is saved and picked up again from its
journal). Every session tool call that reaches a live session is written
into its trace (kitsoki.api.call). Live-call surfaces (kanban-task,
office-task) exist only inside an agent call and are refused here.

--stdio speaks newline-delimited JSON-RPC on stdin/stdout; otherwise
Streamable HTTP is served on --http (a loopback address, default
127.0.0.1:0) and a bearer token is printed on stderr. An HTTP request body
over --max-body-bytes is answered 413 without being read past the limit,
one still arriving after 10 seconds 408; a request without the token is
answered 401 before its body is read, one addressed to a host other than
loopback (DNS rebinding) 403; an unknown, deleted or expired Mcp-Session-Id
is answered 404, and an initialize past --max-sessions live sessions 503
(a session expires after --session-idle without a request).

With --temporal HOST:PORT (and --namespace, --task-queue, --blobs, the TLS
flags) the session tools drive sessions on that Temporal cluster instead
of the sessions directory, as kitsoki session … --temporal does: a new
session's story travels as a bundle in the blob store, session_fork_kitsoki
forks a running session at any finished turn, and nothing is held live
here (--max-live-sessions does not apply).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.MaxBodyBytes <= 0 {
				return usageErr(cmd, fmt.Sprintf("kitsoki mcp serve: --max-body-bytes %d: must be a positive number of bytes (default %d)", o.MaxBodyBytes, mcpguard.DefaultMaxBody))
			}
			if o.MaxSessions <= 0 || o.SessionIdle <= 0 {
				return usageErr(cmd, fmt.Sprintf("kitsoki mcp serve: --max-sessions %d, --session-idle %s: both must be positive (defaults %d and %s)", o.MaxSessions, o.SessionIdle, mcpguard.DefaultMaxSessions, mcpguard.DefaultIdleTimeout))
			}
			logger := g.logger(cmd.ErrOrStderr())
			o.Stdin, o.Stdout, o.Stderr, o.Logger = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), logger
			o.LoadStory = loadStoryIn
			models := localllm.NewPool() // the runs it starts share one server per local model
			defer models.Close()
			o.StartRun = startRun(g, cmd, models)
			if maxSessions <= 0 {
				return usageErr(cmd, fmt.Sprintf("kitsoki mcp serve: --max-live-sessions %d: must be a positive number of sessions", maxSessions))
			}
			if o.Root == "" {
				wd, err := os.Getwd()
				if err != nil {
					return exitWith(exitFailure, err)
				}
				o.Root = wd
			}
			// The session tools load stories as the other tools do: every
			// file inside --workspace, else the served directory.
			g.workspace = orDefault(o.Workspace, o.Root)
			if tf.addr != "" {
				return serveOnCluster(cmd, g, &tf, o)
			}
			if err := tf.refuseWithout(cmd); err != nil {
				return err
			}
			store, err := mcpStore(g, sessionsFlag, o.Root)
			if err != nil {
				return exitWith(exitFailure, err)
			}
			pool := &driver.Pool{Max: maxSessions, Sessions: sessionService(g, store, cmd.ErrOrStderr(), sessionAgents{timeout: host.DefaultTimeout, models: models})}
			defer pool.Close() // before the models: the sessions' servers are stopped after them
			o.Sessions = mcpSessions{pool: pool}
			return mcpserve.Serve(cmd.Context(), o)
		},
	}
	f := serve.Flags()
	f.StringVar(&o.Surface, "surface", "configuration", "configuration or external")
	f.BoolVar(&o.Stdio, "stdio", false, "serve on stdin/stdout")
	f.StringVar(&o.HTTPAddr, "http", "", "serve Streamable HTTP on this loopback address (default 127.0.0.1:0)")
	f.StringVar(&o.Workspace, "workspace", "", "directory every file of a story the tools load must stay inside (default: --root)")
	f.StringVar(&o.Token, "token", "", "bearer token HTTP clients must send (default: random)")
	f.StringVar(&o.Root, "root", "", "directory the tools may read (default: the working directory)")
	f.Int64Var(&o.MaxBodyBytes, "max-body-bytes", mcpguard.DefaultMaxBody, "largest HTTP request body accepted, in bytes (larger: 413)")
	f.StringVar(&sessionsFlag, "sessions-dir", "", "where the session tools keep sessions (default $"+session.EnvDir+", else .kitsoki/sessions in the workspace of --root)")
	f.IntVar(&maxSessions, "max-live-sessions", driver.DefaultPoolMax, "the most sessions the session tools keep live at once")
	f.IntVar(&o.MaxSessions, "max-sessions", mcpguard.DefaultMaxSessions, "most live MCP sessions over HTTP (more initialize requests: 503)")
	f.DurationVar(&o.SessionIdle, "session-idle", mcpguard.DefaultIdleTimeout, "an MCP session over HTTP expires after this long without a request")
	addTemporalFlags(serve, &tf, true)
	cmd.AddCommand(serve)
	return cmd
}

// serveOnCluster serves o with the session tools on the cluster tf names.
func serveOnCluster(cmd *cobra.Command, g *globals, tf *temporalFlags, o mcpserve.ServeOptions) error {
	cl, err := tf.dial(cmd.Context(), o.Logger)
	if err != nil {
		return err
	}
	defer cl.Close()
	o.Sessions = mcpClusterSessions{svc: newClusterSessions(g, tf, cl), logger: o.Logger}
	return mcpserve.Serve(cmd.Context(), o)
}

// mcpStore is the session tools' sessions directory.
func mcpStore(g *globals, flag, root string) (session.Store, error) {
	if flag != "" || os.Getenv(session.EnvDir) != "" {
		return session.Store{Dir: sessionsDir(flag, "")}, nil
	}
	ws, err := workspace.For(filepath.Join(root, "app.yaml"), g.workspace)
	if err != nil {
		return session.Store{}, err
	}
	return session.Store{Dir: session.DefaultDir(ws.Dir())}, nil
}

// startRun runs a story to the end of the given intents, as `kitsoki run
// --intents` would, and reports where it stopped. It backs the external
// surface's run-starting tool. Its runs start local models in models.
func startRun(g *globals, cmd *cobra.Command, models *localllm.Pool) mcpserve.RunStarter {
	return func(ctx context.Context, req mcpserve.StartRunRequest) (_ *mcpserve.StartRunResult, err error) {
		st, err := story.Load(req.Story, story.WithWorkspace(req.Workspace))
		if err != nil {
			return nil, err
		}
		// The run's logs (a plugin's stderr is logged) and the error the
		// tool answers with are masked for the story's secrets.
		defer func() { err = secret.New(st.Secrets).Error(err) }()
		if err := orchestrator.CheckWorld(st, req.World); err != nil {
			return nil, err // before a trace is made for a run that cannot start
		}
		id := newSessionID()
		path := filepath.Join(".kitsoki", "runs", id+".jsonl")
		logger := g.logger(redacting(cmd.ErrOrStderr(), st.Secrets))
		rt, err := openRuntime(st, runtimeConfig{session: id, trace: path, world: req.World, title: req.Title, logger: logger, models: models})
		if err != nil {
			return nil, err
		}
		defer rt.Close()
		sess := rt.Session()
		out, err := sess.Start(ctx)
		if err != nil {
			return nil, err
		}
		lines, what := req.Intents, "intent"
		if len(req.Say) > 0 {
			lines, what = req.Say, "say"
		}
		var routes []mcpserve.RouteResult
		for _, line := range lines {
			if out.Done || out.Outcome != orchestrator.OutcomeTransitioned {
				break
			}
			if what == "say" || sess.IsFreeText(line) {
				out, err = sess.Say(ctx, line)
			} else {
				intent, slots, perr := sess.ParseInput(line)
				if perr != nil {
					return nil, fmt.Errorf("intent %q: %w", line, perr)
				}
				out, err = sess.Turn(ctx, intent, slots, line)
			}
			if err != nil {
				return nil, err
			}
			if r := out.Route; r != nil {
				routes = append(routes, mcpserve.RouteResult{Input: line, Tier: r.Tier, Intent: r.Intent, Slots: r.Slots, Confidence: r.Confidence})
			}
			if out.Rejection != nil {
				return nil, fmt.Errorf("%s %q rejected: %s", what, line, out.Rejection.Error())
			}
			if out.Err != nil {
				return nil, fmt.Errorf("%s %q: %w", what, line, out.Err)
			}
		}
		abs, _ := filepath.Abs(path)
		return &mcpserve.StartRunResult{RunID: id, State: sess.State(), Terminal: out.Done, Trace: abs, Routes: routes}, nil
	}
}
