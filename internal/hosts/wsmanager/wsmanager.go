// Package wsmanager is host.workspace_manager.get: a workspace snapshot
// (id, root path, repositories, issue, pull requests) read from an external
// workspace-manager CLI, as `<cmd> get <workspace_id>` printing one JSON
// object. The command is $KITSOKI_WORKSPACE_MANAGER (words split at
// spaces), else workspace-manager on PATH.
package wsmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Name is the handler.
const Name = "host.workspace_manager.get"

// EnvCommand names the environment variable that gives the CLI.
const EnvCommand = "KITSOKI_WORKSPACE_MANAGER"

// Program is the CLI looked up in PATH when EnvCommand is not set.
const Program = "workspace-manager"

// Config is what the handler needs of the run.
type Config struct {
	Workspace workspace.Root
	Logger    *slog.Logger
	// Getenv reads EnvCommand; nil is os.Getenv.
	Getenv func(string) string
}

// Register installs the handler.
func Register(h *host.Host, cfg Config) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	h.Register(Name, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
		data, err := get(ctx, cfg, call.Args)
		if err != nil {
			return &host.Result{Data: map[string]any{"ok": false}, Err: fmt.Errorf("%s: %w", Name, err)}, nil
		}
		data["ok"] = true
		return &host.Result{Data: data}, nil
	}))
}

func get(ctx context.Context, cfg Config, args map[string]any) (map[string]any, error) {
	if err := catalog.CheckArgs(Name, args); err != nil {
		return nil, err
	}
	id, _ := args["workspace_id"].(string)
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, errors.New("with.workspace_id is required: the workspace the workspace-manager CLI knows")
	}
	if err := cmdrun.NoOption(Program, "workspace_id", id); err != nil {
		return nil, err
	}
	argv := []string{Program}
	if v := strings.Fields(cfg.Getenv(EnvCommand)); len(v) > 0 {
		argv = v
	}
	t := cmdrun.Tool{Program: argv[0], Logger: cfg.Logger, Root: cfg.Workspace,
		Missing: "install the workspace manager, or name its command in $" + EnvCommand + " (it is run as <cmd> get <workspace_id> and prints JSON)"}
	dir := ""
	if !cfg.Workspace.IsZero() {
		dir = cfg.Workspace.Dir()
	}
	out, err := t.Run(ctx, dir, append(argv[1:], "get", id)...)
	if err != nil {
		return nil, err
	}
	var data map[string]any
	dec := json.NewDecoder(strings.NewReader(out.Stdout))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil || data == nil {
		return nil, fmt.Errorf("%s get %s printed no JSON object (%v): it must print the workspace as one object {id, root_path, repos, issue, prs}", argv[0], id, err)
	}
	return check(normalize(data).(map[string]any))
}

// check refuses a snapshot whose known keys have the wrong shape.
func check(d map[string]any) (map[string]any, error) {
	for k, want := range map[string]string{"id": "string", "root_path": "string", "repos": "list", "issue": "object", "prs": "list"} {
		v, ok := d[k]
		if !ok || v == nil {
			continue
		}
		good := false
		switch want {
		case "string":
			_, good = v.(string)
		case "list":
			_, good = v.([]any)
		case "object":
			_, good = v.(map[string]any)
		}
		if !good {
			return nil, fmt.Errorf("the workspace's %s must be a %s, got %T", k, want, v)
		}
	}
	return d, nil
}

// normalize turns json.Numbers into int64 or float64, as world values are.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}
