package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// DefaultNamespace is the namespace kitsoki uses when none is given (the
// dev server's only one).
const DefaultNamespace = "default"

// ClientOptions say which cluster, namespace and task queue a client
// talks to.
type ClientOptions struct {
	// HostPort is the frontend's HOST:PORT.
	HostPort string
	// Namespace is "" for DefaultNamespace.
	Namespace string
	// TaskQueue is where sessions are started; "" is DefaultTaskQueue.
	TaskQueue string
	// Logger receives the SDK's logs; nil discards them.
	Logger *slog.Logger
	// TLS, when set, connects over TLS with this configuration.
	TLS *tls.Config
	// APIKey, when set, authenticates every request with it (Temporal
	// Cloud's API keys); it is never logged.
	APIKey string
	// DataConverter encodes payloads; nil is the SDK's default. Set it to
	// Blobs.DataConverter so large payloads travel as blobs: every worker
	// and client of a cluster must use the same blob store.
	DataConverter converter.DataConverter
}

// Client is a connection to a Temporal cluster for kitsoki's sessions:
// it starts session workflows, sends their intents, reads their queries,
// lists them and fetches their traces.
type Client struct {
	c         client.Client
	dc        converter.DataConverter // the payloads' encoding, as Dial was given it
	namespace string
	queue     string
	hostPort  string
}

// UnreachableError is a cluster that did not answer.
type UnreachableError struct {
	HostPort string
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the Temporal server at %s: %v; start one with `make temporal-dev` (127.0.0.1:7233) or pass --temporal HOST:PORT of a running cluster", e.HostPort, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Dial connects to the cluster and checks that the namespace exists.
// ctx bounds the connection attempt.
func Dial(ctx context.Context, o ClientOptions) (*Client, error) {
	if o.HostPort == "" {
		return nil, errors.New("no Temporal server: pass --temporal HOST:PORT (e.g. 127.0.0.1:7233, the address `make temporal-dev` serves)")
	}
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	q := o.TaskQueue
	if q == "" {
		q = DefaultTaskQueue
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := client.Options{HostPort: o.HostPort, Namespace: ns, Logger: tlog.NewStructuredLogger(logger),
		ConnectionOptions: client.ConnectionOptions{TLS: o.TLS}, DataConverter: o.DataConverter}
	if o.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(o.APIKey)
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, &UnreachableError{HostPort: o.HostPort, Err: err}
	}
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns}); err != nil {
		c.Close()
		if _, ok := errors.AsType[*serviceerror.NamespaceNotFound](err); ok {
			return nil, fmt.Errorf("namespace %q does not exist on the Temporal server at %s; create it (temporal operator namespace create --namespace %s) or pass --namespace NS", ns, o.HostPort, ns)
		}
		return nil, &UnreachableError{HostPort: o.HostPort, Err: err}
	}
	dc := o.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	return &Client{c: c, dc: dc, namespace: ns, queue: q, hostPort: o.HostPort}, nil
}

// Temporal is the SDK client (a worker is built on it).
func (c *Client) Temporal() client.Client { return c.c }

// Namespace is the namespace the client talks to.
func (c *Client) Namespace() string { return c.namespace }

// TaskQueue is the task queue sessions are started on.
func (c *Client) TaskQueue() string { return c.queue }

// HostPort is the cluster's address.
func (c *Client) HostPort() string { return c.hostPort }

// Close closes the connection.
func (c *Client) Close() { c.c.Close() }

// Memo keys a session workflow is started with; kitsoki session list
// reads them back.
const (
	MemoStoryPath = "kitsoki.story_path"
	MemoStoryHash = "kitsoki.story_hash"
	// MemoStoryBundle is the digest of the story bundle the session runs
	// (absent for a session read from the workers' stories directory).
	MemoStoryBundle = "kitsoki.story_bundle"
	MemoAppID       = "kitsoki.app_id"
)

// ErrRunning is a session id already taken by a running session.
var ErrRunning = errors.New("a session with this id is already running on the cluster")

// Start starts the session workflow in.SessionID (its workflow id) on the
// client's task queue. appID goes in the memo with the story.
func (c *Client) Start(ctx context.Context, in SessionInput, appID string) error {
	return c.start(ctx, in, c.queue, memo(in.Story, appID))
}

// start starts the session workflow in.SessionID on queue with memo m.
func (c *Client) start(ctx context.Context, in SessionInput, queue string, m map[string]any) error {
	_, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        in.SessionID,
		TaskQueue: queue,
		Memo:      m,
		// A closed session's id is not reused: its history is its record.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            fmt.Sprintf("kitsoki session of %s", in.Story.Path),
	}, SessionWorkflowName, in)
	if _, ok := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); ok {
		return fmt.Errorf("session %s: %w (or it ran and closed: its id is not reused)", in.SessionID, ErrRunning)
	}
	if err != nil {
		return fmt.Errorf("start session %s: %w", in.SessionID, err)
	}
	return nil
}

func memo(ref StoryRef, appID string) map[string]any {
	m := map[string]any{MemoStoryPath: ref.Path, MemoStoryHash: ref.Hash, MemoAppID: appID}
	if ref.Bundle != "" {
		m[MemoStoryBundle] = ref.Bundle
	}
	return m
}

// SessionInfo is a session as the cluster's visibility records it, with
// where it stands (from its status query while it runs, its result once
// it completed).
type SessionInfo struct {
	ID        string    `json:"id"`
	RunID     string    `json:"run_id"`
	Status    string    `json:"status"` // running, completed, failed, terminated, canceled, timed_out, continued_as_new
	Story     StoryRef  `json:"story"`
	AppID     string    `json:"app_id,omitempty"`
	Started   time.Time `json:"started"`
	Closed    time.Time `json:"closed,omitzero"`
	TaskQueue string    `json:"task_queue"`
	// State, Turn, Done and Exit are where the session stands; empty when
	// it could not be read (a failed session, no worker to answer).
	State string `json:"state,omitempty"`
	Turn  int64  `json:"turn"`
	Done  bool   `json:"done,omitempty"`
	Exit  string `json:"exit,omitempty"`
	World Value  `json:"world"`
	// Allowed are the intents a running session accepts now.
	Allowed []string `json:"allowed_intents,omitempty"`
	// Updated is the session's last activity: its close time, else the
	// end of its last turn (SessionStatus.LastTurn).
	Updated time.Time `json:"updated"`
	// Error is why State could not be read, or why the session failed.
	Error string `json:"error,omitempty"`
	// ForkedFrom is the session this one was forked from.
	ForkedFrom string `json:"forked_from,omitempty"`
}

// Running reports whether the session's workflow is still open.
func (s *SessionInfo) Running() bool { return s.Status == "running" }

func statusName(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return "running"
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "failed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "canceled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued_as_new"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed_out"
	}
	return strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

func (c *Client) info(ex *workflowpb.WorkflowExecutionInfo) SessionInfo {
	si := SessionInfo{ID: ex.GetExecution().GetWorkflowId(), RunID: ex.GetExecution().GetRunId(), Status: statusName(ex.GetStatus()),
		TaskQueue: ex.GetTaskQueue()}
	if t := ex.GetStartTime(); t != nil {
		si.Started = t.AsTime().UTC()
	}
	si.Updated = si.Started
	if t := ex.GetCloseTime(); t != nil && ex.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		si.Closed = t.AsTime().UTC()
		si.Updated = si.Closed
	}
	dc := converter.GetDefaultDataConverter()
	for k, p := range ex.GetMemo().GetFields() {
		var v string
		if dc.FromPayload(p, &v) != nil {
			continue
		}
		switch k {
		case MemoStoryPath:
			si.Story.Path = v
		case MemoStoryHash:
			si.Story.Hash = v
		case MemoStoryBundle:
			si.Story.Bundle = v
		case MemoAppID:
			si.AppID = v
		case MemoForkedFrom:
			si.ForkedFrom = v
		}
	}
	return si
}

// fill reads where the session stands: the status query of a running
// session, the result of a completed one.
func (c *Client) fill(ctx context.Context, si *SessionInfo) {
	switch si.Status {
	case "running":
		st, err := c.Status(ctx, si.ID)
		if err != nil {
			si.Error = err.Error()
			return
		}
		si.State, si.Turn, si.Done, si.Exit, si.World, si.Updated, si.Allowed = st.State, st.Turn, st.Done, st.Exit, st.World, st.Updated, st.Allowed
		if !st.LastTurn.IsZero() {
			si.Updated = st.LastTurn
		}
	case "completed":
		var res SessionResult
		if err := c.c.GetWorkflow(ctx, si.ID, si.RunID).Get(ctx, &res); err != nil {
			si.Error = err.Error()
			return
		}
		si.State, si.Turn, si.Done, si.Exit, si.World = res.State, res.Turn, true, res.Exit, res.World
	default:
		if err := c.c.GetWorkflow(ctx, si.ID, si.RunID).Get(ctx, nil); err != nil {
			si.Error = err.Error()
		}
	}
}

// List returns the kitsoki sessions the namespace's visibility holds (one
// entry per session: the runs a continue-as-new closed are left out),
// newest first, each with where it stands.
func (c *Client) List(ctx context.Context) ([]SessionInfo, error) {
	var out []SessionInfo
	var token []byte
	for {
		resp, err := c.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: c.namespace,
			Query: fmt.Sprintf("WorkflowType = '%s'", SessionWorkflowName), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list sessions on %s: %w", c.hostPort, err)
		}
		for _, ex := range resp.GetExecutions() {
			if ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
				continue
			}
			out = append(out, c.info(ex))
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	// A running session's status is a query a worker answers (the server
	// waits for one when none polls): they are asked ListConcurrency at a
	// time.
	sem := make(chan struct{}, ListConcurrency)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c.fill(ctx, &out[i])
		})
	}
	wg.Wait()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}

// ListConcurrency is how many sessions' status List reads at once.
const ListConcurrency = 8

// ErrNoSession is a session id the cluster does not know.
var ErrNoSession = errors.New("no such session on the cluster")

// Describe returns the session id names (its latest run).
func (c *Client) Describe(ctx context.Context, id string) (*SessionInfo, error) {
	resp, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return nil, fmt.Errorf("session %s: %w (namespace %s at %s; kitsoki session list --temporal %s shows them)", id, ErrNoSession, c.namespace, c.hostPort, c.hostPort)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	if t := resp.GetWorkflowExecutionInfo().GetType().GetName(); t != SessionWorkflowName {
		return nil, fmt.Errorf("workflow %s is a %s, not a kitsoki session (%s)", id, t, SessionWorkflowName)
	}
	si := c.info(resp.GetWorkflowExecutionInfo())
	c.fill(ctx, &si)
	return &si, nil
}

// Delete deletes the session id: a running one is terminated first, and
// its workflow and history are removed (the server does it in the
// background, so a list right after may still show it).
func (c *Client) Delete(ctx context.Context, id string) error {
	if _, err := c.Describe(ctx, id); err != nil {
		return err
	}
	_, err := c.c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace: c.namespace, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id}})
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return fmt.Errorf("session %s: %w", id, ErrNoSession)
	}
	if err != nil {
		return fmt.Errorf("session %s: delete: %w", id, err)
	}
	return nil
}

// Status queries a running session's status.
func (c *Client) Status(ctx context.Context, id string) (*SessionStatus, error) {
	v, err := c.c.QueryWorkflow(ctx, id, "", QueryStatus)
	if err != nil {
		return nil, fmt.Errorf("session %s: query %s: %w", id, QueryStatus, err)
	}
	var st SessionStatus
	if err := v.Get(&st); err != nil {
		return nil, fmt.Errorf("session %s: query %s: %w", id, QueryStatus, err)
	}
	return &st, nil
}

// Attach waits until the running session id has started and takes no
// turn, and returns its status.
func (c *Client) Attach(ctx context.Context, id string) (*SessionStatus, error) {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: AttachUpdate,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return nil, c.closedOr(ctx, id, err)
	}
	var st SessionStatus
	if err := h.Get(ctx, &st); err != nil {
		return nil, c.closedOr(ctx, id, err)
	}
	return &st, nil
}

// ClosedError is a session whose workflow is no longer running.
type ClosedError struct{ Info *SessionInfo }

func (e *ClosedError) Error() string {
	i := e.Info
	if i.Status == "completed" {
		return fmt.Sprintf("session %s finished in state %q at turn %d; start a new session", i.ID, i.State, i.Turn)
	}
	msg := fmt.Sprintf("session %s is %s", i.ID, strings.ReplaceAll(i.Status, "_", " "))
	if i.Error != "" {
		msg += ": " + i.Error
	}
	return msg + "; start a new session"
}

// closedOr turns the failure of an update into a ClosedError when the
// session's workflow closed.
func (c *Client) closedOr(ctx context.Context, id string, err error) error {
	if si, derr := c.Describe(ctx, id); derr == nil && !si.Running() {
		return &ClosedError{Info: si}
	}
	return fmt.Errorf("session %s: %w", id, err)
}

// RejectedError is an intent the session's update validator refused: the
// turn was not taken and nothing was written.
type RejectedError struct{ Rejection *orchestrator.Rejection }

func (e *RejectedError) Error() string { return e.Rejection.Error() }

// Intent sends one intent (or free text: req.Intent "", req.Input the
// text) and returns the turn's result. An intent the validator refused is
// a *RejectedError with the rejection a local run reports; one the
// terminal state refused, an error saying so.
func (c *Client) Intent(ctx context.Context, id string, req IntentRequest) (*TurnResult, error) {
	for attempt := 1; ; attempt++ {
		tr, err := c.intent(ctx, id, req)
		if err == nil {
			return tr, nil
		}
		if ae, ok := errors.AsType[*temporal.ApplicationError](err); ok {
			if ae.Type() == NoHistoryError {
				return nil, orchestrator.ErrNoHistory
			}
			var rej orchestrator.Rejection
			if ae.HasDetails() && ae.Details(&rej) == nil && rej.Code != "" {
				return nil, &RejectedError{Rejection: &rej}
			}
			return nil, fmt.Errorf("session %s: %s", id, ae.Message())
		}
		// A run that closed to continue as new refuses the update (not
		// found: nothing was taken); the session's next run takes it.
		_, notFound := errors.AsType[*serviceerror.NotFound](err)
		if notFound && attempt < maxContinuedRetries {
			if si, derr := c.Describe(ctx, id); derr == nil && si.Running() {
				continue
			}
		}
		return nil, c.closedOr(ctx, id, err)
	}
}

// maxContinuedRetries bounds how often Intent sends an update again to a
// session whose run closed under it to continue as new.
const maxContinuedRetries = 5

func (c *Client) intent(ctx context.Context, id string, req IntentRequest) (*TurnResult, error) {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: IntentUpdate,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return nil, err
	}
	var tr TurnResult
	if err := h.Get(ctx, &tr); err != nil {
		return nil, err
	}
	return &tr, nil
}

// TraceJSONL returns the session's trace as a local run's trace file
// holds it: the first run's session.header, then the events of every run
// of the workflow in order (a continue-as-new starts a new run).
func (c *Client) TraceJSONL(ctx context.Context, id string) ([]byte, error) {
	runs, err := c.runs(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []byte
	for i := len(runs) - 1; i >= 0; i-- {
		v, err := c.c.QueryWorkflow(ctx, id, runs[i], QueryTraceJSONL)
		if err != nil {
			return nil, fmt.Errorf("session %s: query %s of run %s (a worker of task queue %s answers it): %w", id, QueryTraceJSONL, runs[i], c.queue, err)
		}
		var text string
		if err := v.Get(&text); err != nil {
			return nil, fmt.Errorf("session %s: query %s: %w", id, QueryTraceJSONL, err)
		}
		b := []byte(text)
		if i != len(runs)-1 { // a later run's own header line is dropped
			if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
				b = b[nl+1:]
			}
		}
		out = append(out, b...)
	}
	return out, nil
}

// runs is the run ids of session id, newest first: its current run, then
// each run a continue-as-new started from, back to its first.
func (c *Client) runs(ctx context.Context, id string) ([]string, error) {
	resp, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return nil, fmt.Errorf("session %s: %w (namespace %s at %s)", id, ErrNoSession, c.namespace, c.hostPort)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	var runs []string
	for run := resp.GetWorkflowExecutionInfo().GetExecution().GetRunId(); run != ""; {
		runs = append(runs, run)
		prev, err := c.previousRun(ctx, id, run)
		if err != nil {
			return nil, err
		}
		run = prev
	}
	return runs, nil
}

// startInput is the input session id's first run started with: a fork's
// carries the session as it stood at the fork.
func (c *Client) startInput(ctx context.Context, id string) (*SessionInput, error) {
	runs, err := c.runs(ctx, id)
	if err != nil {
		return nil, err
	}
	first := runs[len(runs)-1]
	it := c.c.GetWorkflowHistory(ctx, id, first, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, fmt.Errorf("session %s: run %s has no history", id, first)
	}
	ev, err := it.Next()
	if err != nil {
		return nil, fmt.Errorf("session %s: history of run %s: %w", id, first, err)
	}
	var in SessionInput
	if err := c.dc.FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		return nil, fmt.Errorf("session %s: the input of run %s: %w", id, first, err)
	}
	return &in, nil
}

// previousRun is the run a continue-as-new started run from ("" for the
// session's first run), read from the run's first history event.
func (c *Client) previousRun(ctx context.Context, id, run string) (string, error) {
	it := c.c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return "", nil
	}
	ev, err := it.Next()
	if err != nil {
		return "", fmt.Errorf("session %s: history of run %s: %w", id, run, err)
	}
	return ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(), nil
}
