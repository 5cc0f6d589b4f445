package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
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
}

// Client is a connection to a Temporal cluster for kitsoki's sessions:
// it starts session workflows, sends their intents, reads their queries,
// lists them and fetches their traces.
type Client struct {
	c         client.Client
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
	c, err := client.DialContext(ctx, client.Options{HostPort: o.HostPort, Namespace: ns, Logger: tlog.NewStructuredLogger(logger)})
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
	return &Client{c: c, namespace: ns, queue: q, hostPort: o.HostPort}, nil
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
