// Package cluster connects the Go API to a Temporal cluster, so that
// kitsoki.Resume picks up a session that lives there as a workflow
// (started by `kitsoki session create --temporal`, `kitsoki run
// --temporal` or an MCP client of `kitsoki mcp serve --temporal`):
//
//	c, err := cluster.Dial(ctx, cluster.Options{HostPort: "127.0.0.1:7233", Namespace: "default"})
//	if err != nil { … }
//	defer c.Close()
//	s, err := kitsoki.Resume(ctx, "chat:room-1/thread-7", kitsoki.WithCluster(c))
//	if err != nil { … }
//	defer s.Close()
//	out, err := s.Do(ctx, "greet name=Ada")
//
// It is a package of its own so that a program that runs sessions only
// locally does not link the Temporal SDK.
package cluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"log/slog"
	"os"

	"github.com/kitsoki/kitsoki/internal/load/story"
	icluster "github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/driver/remote"
)

// Options say which cluster and namespace the sessions are on.
type Options struct {
	// HostPort is the cluster frontend's HOST:PORT (`make temporal-dev`
	// serves 127.0.0.1:7233). Required.
	HostPort string
	// Namespace is "" for "default".
	Namespace string
	// TaskQueue is the kitsoki workers' queue; "" is "kitsoki".
	TaskQueue string
	// BlobsDir is the blob store the workers share (the session's story
	// bundle and large payloads); "" is $KITSOKI_BLOBS_DIR, else
	// .kitsoki/blobs in the working directory, as for `kitsoki worker`.
	BlobsDir string
	// StoriesDir is the workers' stories directory, where the story of a
	// session started with `kitsoki run --stories DIR` (one that carries
	// no bundle) is read; "" is the working directory.
	StoriesDir string
	// TLS, when set, connects over TLS; APIKey authenticates (Temporal
	// Cloud) and is never logged.
	TLS    *tls.Config
	APIKey string
	// Logger receives the SDK's logs; nil discards them.
	Logger *slog.Logger
}

// Cluster is a connection to a Temporal cluster's kitsoki sessions; hand
// it to kitsoki.Resume with kitsoki.WithCluster. One Cluster serves any
// number of sessions; Close it when done.
type Cluster struct {
	c   *icluster.Client
	svc *remote.Sessions
}

// Dial connects to the cluster and checks that the namespace exists;
// ctx bounds the attempt. An unreachable cluster or unknown namespace is
// an error that names the address and what to do.
func Dial(ctx context.Context, o Options) (*Cluster, error) {
	blobs := &icluster.Blobs{Dir: icluster.BlobsDir(o.BlobsDir, ".", os.Getenv)}
	c, err := icluster.Dial(ctx, icluster.ClientOptions{HostPort: o.HostPort, Namespace: o.Namespace, TaskQueue: o.TaskQueue,
		Logger: o.Logger, TLS: o.TLS, APIKey: o.APIKey, DataConverter: blobs.DataConverter()})
	if err != nil {
		return nil, err
	}
	return &Cluster{c: c, svc: &remote.Sessions{Client: c, Stories: &icluster.Stories{Dir: cmp.Or(o.StoriesDir, "."), Blobs: blobs},
		Load: func(path string) (*story.Story, error) { return story.Load(path) }}}, nil
}

// ResumeSession reattaches to the running session ref names (its key or
// id): kitsoki.Resume calls it.
func (c *Cluster) ResumeSession(ctx context.Context, ref string) (driver.Attached, error) {
	return c.svc.Attach(ctx, ref)
}

// Close closes the connection.
func (c *Cluster) Close() error {
	c.c.Close()
	return nil
}
