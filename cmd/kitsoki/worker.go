package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// temporalFlags are the flags every --temporal command shares.
type temporalFlags struct {
	addr      string
	namespace string
	queue     string
	stories   string
	// blobs is --blobs: the blob store's directory.
	blobs string
	// dialTimeout bounds connecting to the cluster.
	dialTimeout time.Duration
	// tls, tlsCA, tlsCert, tlsKey, tlsServerName connect over TLS.
	tls                                   bool
	tlsCA, tlsCert, tlsKey, tlsServerName string
}

// EnvTemporalAPIKey names the environment variable an API key is read
// from (never a flag: a flag shows in the process list).
const EnvTemporalAPIKey = "TEMPORAL_API_KEY"

func addTemporalFlags(cmd *cobra.Command, f *temporalFlags, withStories bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "temporal", "", "HOST:PORT of a Temporal cluster's frontend (make temporal-dev serves 127.0.0.1:7233)")
	fl.StringVar(&f.namespace, "namespace", cluster.DefaultNamespace, "Temporal namespace")
	fl.StringVar(&f.queue, "task-queue", cluster.DefaultTaskQueue, "Temporal task queue of the kitsoki workers")
	fl.StringVar(&f.blobs, "blobs", "", "the blob store every worker and client of the cluster shares, for payloads over 256 KiB (default $"+cluster.EnvBlobsDir+", else <stories>/.kitsoki/blobs)")
	fl.DurationVar(&f.dialTimeout, "connect-timeout", 10*time.Second, "how long to wait for the Temporal server to answer")
	fl.BoolVar(&f.tls, "tls", false, "connect to the cluster over TLS (implied by --tls-ca, --tls-cert and $"+EnvTemporalAPIKey+")")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "PEM file of the CA that signed the cluster's certificate (default: the system's roots)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM file of this client's certificate, for mutual TLS (with --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM file of this client's private key, for mutual TLS (with --tls-cert)")
	fl.StringVar(&f.tlsServerName, "tls-server-name", "", "the name the cluster's certificate is checked against (default: the --temporal host)")
	if withStories {
		fl.StringVar(&f.stories, "stories", ".", "the stories directory every worker of the queue has: kitsoki run --stories DIR names the session's story by its path there (without it the story travels with the session, as a bundle in the blob store)")
	}
}

// tlsConfig is the TLS configuration the flags ask for (nil: none).
func (f *temporalFlags) tlsConfig() (*tls.Config, error) {
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together: give both for mutual TLS, or neither")
	}
	if !f.tls && f.tlsCA == "" && f.tlsCert == "" && f.tlsServerName == "" && os.Getenv(EnvTemporalAPIKey) == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.tlsServerName}
	if f.tlsCA != "" {
		pem, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", f.tlsCA)
		}
		tc.RootCAs = pool
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", f.tlsCert, f.tlsKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// refuseWithout refuses the cluster flags without --temporal.
func (f *temporalFlags) refuseWithout(cmd *cobra.Command) error {
	for _, n := range []string{"namespace", "task-queue", "stories", "blobs", "connect-timeout", "tls", "tls-ca", "tls-cert", "tls-key", "tls-server-name"} {
		if fl := cmd.Flags().Lookup(n); fl != nil && fl.Changed {
			return exitWith(exitUsage, fmt.Errorf("--%s applies to a session on a Temporal cluster: give --temporal HOST:PORT too", n))
		}
	}
	return nil
}

// blobStore is the blob store the flags name: --blobs, else
// $KITSOKI_BLOBS_DIR, else .kitsoki/blobs in the stories directory.
func (f *temporalFlags) blobStore() *cluster.Blobs {
	return &cluster.Blobs{Dir: cluster.BlobsDir(f.blobs, f.stories, os.Getenv)}
}

// dial connects to the cluster the flags name; failures are exit 1 with
// the address in the message.
func (f *temporalFlags) dial(ctx context.Context, logger *slog.Logger) (*cluster.Client, error) {
	tc, err := f.tlsConfig()
	if err != nil {
		return nil, exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, f.dialTimeout)
	defer cancel()
	c, err := cluster.Dial(ctx, cluster.ClientOptions{HostPort: f.addr, Namespace: f.namespace, TaskQueue: f.queue, Logger: logger,
		TLS: tc, APIKey: os.Getenv(EnvTemporalAPIKey), DataConverter: f.blobStore().DataConverter()})
	if err != nil {
		return nil, exitWith(exitFailure, fmt.Errorf("kitsoki: %w", err))
	}
	return c, nil
}

type workerOpts struct {
	tf       temporalFlags
	timeout  time.Duration
	cassette string
	// heartbeat is --heartbeat-timeout: how soon a dead worker's call is
	// issued again.
	heartbeat time.Duration
}

func newWorkerCmd(g *globals) *cobra.Command {
	o := &workerOpts{}
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT",
		Short: "Run a Temporal worker: take kitsoki sessions' turns and calls from a task queue",
		Long: `Run a Temporal worker for kitsoki sessions started with kitsoki run --temporal.

The worker polls --task-queue (default "kitsoki") of --namespace on the
cluster at --temporal, runs the session workflow (kitsoki.session) and every
call of it (the kitsoki.invoke activity). A session started by kitsoki run
--temporal carries its story: the client packs the story's files into a
bundle in the blob store (--blobs, else $KITSOKI_BLOBS_DIR, else
.kitsoki/blobs in the stories directory), which every worker and client of
the cluster must share, and the workers run that bundle (unpacked once
under <blobs>/bundles), so the session runs the version it started with.
A session started with kitsoki run --stories DIR names its story by its path
relative to that directory instead: the worker reads it from its own
--stories (default the current directory), which must hold the same files.

Calls are wired as kitsoki run wires them: the story's agents: (live
transports, the demo agent, host_plugins:), ${VAR} secrets resolved from
this worker's environment, --agent-timeout for calls with no with.timeout,
and --cassette to replay a cassette in place of the agents (each session
replays it from its start).

SIGINT or SIGTERM stops the worker gracefully: it stops polling and waits
for the tasks it holds.

Exit codes:
  0  stopped by SIGINT/SIGTERM
  1  the cluster is unreachable, the namespace or the stories directory
     does not exist, a cassette does not load, or the worker failed
  2  the command line is wrong`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd, g, o)
		},
	}
	addTemporalFlags(cmd, &o.tf, true)
	f := cmd.Flags()
	f.DurationVar(&o.timeout, "agent-timeout", host.DefaultTimeout, "hard deadline of an agent call that sets no with.timeout")
	f.DurationVar(&o.heartbeat, "heartbeat-timeout", cluster.DefaultHeartbeatTimeout, "a call whose worker sends no heartbeat for this long is issued again on another worker (sessions that set none)")
	f.StringVar(&o.cassette, "cassette", "", "replay this cassette (.yaml or .yaml.zst) in place of the declared agents, from its start for each session")
	addWorkspaceFlag(cmd, g)
	return cmd
}

func runWorker(cmd *cobra.Command, g *globals, o *workerOpts) error {
	if o.tf.addr == "" {
		return exitWith(exitUsage, errors.New("kitsoki worker: give --temporal HOST:PORT, the Temporal cluster to take work from (make temporal-dev serves 127.0.0.1:7233)"))
	}
	if o.heartbeat <= 0 {
		return exitWith(exitUsage, fmt.Errorf("kitsoki worker: --heartbeat-timeout must be longer than zero, got %s (default %s)", o.heartbeat, cluster.DefaultHeartbeatTimeout))
	}
	stderr := cmd.ErrOrStderr()
	logger := g.logger(stderr)
	dir, err := filepath.Abs(o.tf.stories)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return exitWith(exitFailure, fmt.Errorf("kitsoki worker: --stories %s: not a directory; pass the directory the sessions' story paths are relative to", o.tf.stories))
	}
	if o.cassette != "" { // checked once here; each session loads its own replay
		if _, err := replay.Load(o.cassette); err != nil {
			return exitWith(exitFailure, fmt.Errorf("kitsoki worker: --cassette: %w", err))
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := o.tf.dial(ctx, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	models := localllm.NewPool() // concurrent calls share one server per local model
	defer models.Close()
	wiring := &workerWiring{logger: logger, timeout: o.timeout, cassette: o.cassette, models: models}
	fatal := make(chan error, 1)
	w, err := cluster.NewWorker(c.Temporal(), cluster.WorkerOptions{
		TaskQueue:        c.TaskQueue(),
		StoriesDir:       dir,
		StoryOptions:     workerStoryOpts(g, o.cassette),
		Blobs:            o.tf.blobStore(),
		CallTimeout:      o.timeout,
		HeartbeatTimeout: o.heartbeat,
		Config:           wiring.config,
		Worker: worker.Options{OnFatalError: func(err error) {
			select {
			case fatal <- err:
			default:
			}
		}},
	})
	if err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki worker: %w", err))
	}
	if err := w.Start(); err != nil {
		return exitWith(exitFailure, fmt.Errorf("kitsoki worker: start: %w", err))
	}
	logger.Info("worker started", "temporal", c.HostPort(), "namespace", c.Namespace(), "task_queue", c.TaskQueue(), "stories", dir)
	fmt.Fprintf(stderr, "kitsoki: worker polling task queue %q of namespace %q at %s (stories %s); Ctrl-C stops it\n", c.TaskQueue(), c.Namespace(), c.HostPort(), dir)
	select {
	case <-ctx.Done():
		w.Stop()
		fmt.Fprintln(stderr, "kitsoki: worker stopped")
		return nil
	case err := <-fatal:
		w.Stop()
		return exitWith(exitFailure, fmt.Errorf("kitsoki worker: %w", err))
	}
}

// workerWiring is the runtime.Config factory of a worker's calls: the
// wiring kitsoki run gives a run, minus what belongs to the session (the
// trace, the session itself), which lives in the workflow.
type workerWiring struct {
	logger   *slog.Logger
	timeout  time.Duration
	cassette string
	models   *localllm.Pool // the worker's local model servers, shared by its calls

	mu        sync.Mutex
	cassettes map[cassetteKey]*replay.Cassette
	warned    map[string]bool
}

// cassetteKey is one session's replay of the worker's cassette (per story
// hash too: the cassette masks that story's secrets).
type cassetteKey struct{ session, hash string }

func (w *workerWiring) config(st *story.Story, sessionID string) runtime.Config {
	cfg := runtime.Config{
		Logger:      w.logger,
		Agents:      runtime.Agents{Live: true},
		Timeout:     w.timeout,
		PinWarning:  w.pinWarning,
		LocalModels: w.models,
	}
	if w.cassette != "" {
		c := w.sessionCassette(st, sessionID)
		if c == nil { // logged: no agent answers rather than a live one
			cfg.Agents.Live = false
			return cfg
		}
		cfg.Cassette = c
	}
	return cfg
}

// sessionCassette is the session's replay of --cassette, loaded at its
// first call; nil (logged) when it does not load with st's secrets.
func (w *workerWiring) sessionCassette(st *story.Story, sessionID string) *replay.Cassette {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := cassetteKey{sessionID, st.ContentHash}
	if c := w.cassettes[k]; c != nil {
		return c
	}
	c, err := replay.Load(w.cassette, cassette.WithSecrets(st.Secrets))
	if err != nil {
		w.logger.Error("cassette does not load", "cassette", w.cassette, "session", sessionID, "err", err)
		return nil
	}
	if w.cassettes == nil {
		w.cassettes = map[cassetteKey]*replay.Cassette{}
	}
	w.cassettes[k] = c
	return c
}

// pinWarning logs each unhonoured selection pin once per worker.
func (w *workerWiring) pinWarning(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.warned[msg] {
		return
	}
	if w.warned == nil {
		w.warned = map[string]bool{}
	}
	w.warned[msg] = true
	w.logger.Warn(msg)
}

// workerStoryOpts are the options each session's story loads with: the
// handlers a --cassette answers are provided, as under kitsoki run.
func workerStoryOpts(g *globals, cassettePath string) []story.Option {
	opts := g.storyOpts()
	if cassettePath != "" {
		opts = append(opts, story.WithReplayedHandlers(replay.HandlerNames(cassettePath)...))
	}
	return opts
}
