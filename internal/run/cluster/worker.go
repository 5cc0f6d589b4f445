package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// DefaultTaskQueue is the task queue workers poll and sessions start on
// when none is given.
const DefaultTaskQueue = "kitsoki"

// WorkerOptions are what a kitsoki worker needs: where its stories are,
// the queue it polls, and how it wires a call's runtime.
type WorkerOptions struct {
	// TaskQueue is the task queue the worker polls; "" is
	// DefaultTaskQueue. Sessions must be started on the same queue.
	TaskQueue string
	// StoriesDir is the stories directory (StoryRef paths are relative to
	// it); it must exist. Every worker of a queue needs the same files.
	StoriesDir string
	// StoryOptions are passed to story.Load (the workspace, the stories
	// path of @kitsoki/ imports).
	StoryOptions []story.Option
	// Blobs is the blob store the sessions' story bundles are in (the
	// one the data converter uses); nil runs only sessions whose story is
	// in StoriesDir.
	Blobs *Blobs
	// CallTimeout is the hard deadline of a call that sets no with.timeout;
	// 0 is host.DefaultTimeout.
	CallTimeout time.Duration
	// HeartbeatTimeout is the heartbeat timeout of the calls of a session
	// whose input sets none (SessionInput.HeartbeatTimeout); 0 is
	// DefaultHeartbeatTimeout. A call whose worker died is issued again
	// once it passes.
	HeartbeatTimeout time.Duration
	// LostCallAttempts is how many times a call lost with its worker is
	// issued in all; 0 is DefaultLostCallAttempts.
	LostCallAttempts int
	// Config returns the runtime configuration a call of st, made by the
	// session sessionID, is dispatched with on this worker (agents,
	// cassette, handlers, logger, clock); see Activities.SessionConfig.
	// nil dispatches with runtime.Config's zero value (declared agents
	// only: none answers).
	Config func(st *story.Story, sessionID string) runtime.Config
	// Worker are the SDK's worker options, passed through.
	Worker worker.Options
}

// ErrNoStoriesDir is a worker given a stories directory that is not one.
var ErrNoStoriesDir = errors.New("the stories directory does not exist")

// Register registers the session workflow and the invoke activity on r
// (a worker, or the SDK test suite's environment) under their names,
// SessionWorkflowName and InvokeActivity, sharing one Stories cache.
func (o WorkerOptions) Register(r worker.Registry) {
	stories := &Stories{Dir: o.StoriesDir, Options: o.StoryOptions, Blobs: o.Blobs}
	wf := &Workflow{Stories: stories, CallTimeout: o.CallTimeout, HeartbeatTimeout: o.HeartbeatTimeout, LostCallAttempts: o.LostCallAttempts}
	r.RegisterWorkflowWithOptions(wf.Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	acts := &Activities{Stories: stories, SessionConfig: o.Config}
	r.RegisterActivityWithOptions(acts.Invoke, activity.RegisterOptions{Name: InvokeActivity})
}

// NewWorker builds a worker of c polling o.TaskQueue, with the session
// workflow and the invoke activity registered. It checks the stories
// directory; it does not start the worker (Start or Run does).
func NewWorker(c client.Client, o WorkerOptions) (worker.Worker, error) {
	if c == nil {
		return nil, errors.New("cluster worker: no Temporal client")
	}
	if o.StoriesDir == "" {
		return nil, fmt.Errorf("cluster worker: give the stories directory: %w", ErrNoStoriesDir)
	}
	fi, err := os.Stat(o.StoriesDir)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("stories directory %s: %w; pass --stories DIR, the directory the sessions' story paths are relative to", o.StoriesDir, ErrNoStoriesDir)
	case err != nil:
		return nil, fmt.Errorf("stories directory %s: %w", o.StoriesDir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("stories directory %s: not a directory: %w; pass --stories DIR, the directory the sessions' story paths are relative to", o.StoriesDir, ErrNoStoriesDir)
	}
	q := o.TaskQueue
	if q == "" {
		q = DefaultTaskQueue
	}
	if o.Worker.MaxHeartbeatThrottleInterval == 0 {
		// The SDK sends a call's heartbeats at most every 0.8 of its
		// heartbeat timeout: too little margin on a loaded machine, where
		// a live worker's call would be taken for lost and run twice.
		o.Worker.MaxHeartbeatThrottleInterval = heartbeatEvery(cmp.Or(o.HeartbeatTimeout, DefaultHeartbeatTimeout))
	}
	w := worker.New(c, q, o.Worker)
	o.Register(w)
	return w, nil
}
