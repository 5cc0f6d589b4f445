package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
)

// ServeOptions configures `kitsoki mcp serve`.
type ServeOptions struct {
	// Surface is configuration (default) or external; legacy names
	// (config) are accepted. Live surfaces need an agent call and are
	// refused.
	Surface string
	// Stdio serves newline-delimited JSON-RPC on Stdin/Stdout. Otherwise
	// HTTPAddr (a loopback host:port; "" means 127.0.0.1:0) is served.
	Stdio    bool
	HTTPAddr string
	// Token is the bearer token HTTP clients must send; "" means a fresh
	// random one, announced on Stderr.
	Token string
	// Root is the directory the tools may read (default: the working
	// directory).
	Root string
	// MaxBodyBytes is the HTTP request-body limit; 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxSessions caps the live MCP sessions over HTTP (0: 100), and
	// SessionIdle expires one after that long without a request (0: 30
	// minutes).
	MaxSessions int
	SessionIdle time.Duration
	LoadStory   StoryLoader
	StartRun    RunStarter
	// Sessions backs the session tools of the external surface.
	Sessions Sessions

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
	// Ready, if set, is called once the server accepts requests, with the
	// endpoint URL and token (both "" on stdio).
	Ready func(url, token string)

	// Workspace is the directory every file of a story loaded by a tool
	// must stay inside (--workspace; default: Root).
	Workspace string
}

// Serve runs kitsoki's MCP server for an outside client until ctx ends (or,
// on stdio, until the input closes). It is what `kitsoki mcp serve
// [--surface S] [--stdio|--http ADDR]` runs.
func Serve(ctx context.Context, opts ServeOptions) error {
	if opts.Surface == "" {
		opts.Surface = string(toolserver.Configuration)
	}
	p, err := toolserver.ParseMode(opts.Surface)
	if err != nil {
		return err
	}
	if p.Surface.Live() {
		return fmt.Errorf("surface %s acts on a live agent call; kitsoki mcp serve offers %s or %s", p.Surface, toolserver.Configuration, toolserver.External)
	}
	if opts.MaxBodyBytes < 0 {
		return fmt.Errorf("mcp serve: MaxBodyBytes %d: must be positive (0 means the default, 4 MiB)", opts.MaxBodyBytes)
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(opts.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if opts.Root == "" {
		if opts.Root, err = os.Getwd(); err != nil {
			return err
		}
	}
	cfg := Config{
		Profile:   p,
		Root:      opts.Root,
		Workspace: opts.Workspace,
		LoadStory: opts.LoadStory,
		StartRun:  opts.StartRun,
		Sessions:  opts.Sessions,
		Logger:    opts.Logger,
	}
	if opts.Stdio {
		s, err := NewSession(cfg)
		if err != nil {
			return err
		}
		defer s.Close()
		if opts.Ready != nil {
			opts.Ready("", "")
		}
		stdio := server.NewStdioServer(s.MCPServer())
		stdio.SetErrorLogger(slog.NewLogLogger(opts.Logger.Handler(), slog.LevelError))
		err = stdio.Listen(ctx, opts.Stdin, opts.Stdout)
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if opts.MaxSessions < 0 || opts.SessionIdle < 0 {
		return fmt.Errorf("mcp serve: MaxSessions %d, SessionIdle %s: must not be negative (0 means the default)", opts.MaxSessions, opts.SessionIdle)
	}
	h, err := toolserver.ListenHTTP(opts.HTTPAddr, opts.Logger, toolserver.WithMaxBodyBytes(opts.MaxBodyBytes),
		toolserver.WithSessionLimits(opts.MaxSessions, opts.SessionIdle))
	if err != nil {
		return err
	}
	defer h.Close()
	s, err := NewSession(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	token, generated := opts.Token, false
	if token == "" {
		if token, err = toolserver.NewToken(); err != nil {
			return err
		}
		generated = true
	}
	// The address is announced once the session is attached: a client
	// that connects as soon as it reads it must find the token in force.
	if err := h.Attach(s, token); err != nil {
		return err
	}
	if generated {
		fmt.Fprintf(opts.Stderr, "kitsoki mcp: serving the %s surface at %s\nkitsoki mcp: send the header \"Authorization: Bearer %s\"\n", p.Surface, h.URL(), token)
	} else {
		fmt.Fprintf(opts.Stderr, "kitsoki mcp: serving the %s surface at %s (bearer token as configured)\n", p.Surface, h.URL())
	}
	if opts.Ready != nil {
		opts.Ready(h.URL(), token)
	}
	<-ctx.Done()
	return nil
}
