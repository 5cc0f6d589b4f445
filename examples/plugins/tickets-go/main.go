// Command tickets-go is an example kitsoki host plugin: a small in-memory
// ticket tracker served with the Go SDK (plugin.ServeHost). A story
// declares it under host_plugins: and calls host.tickets.create,
// host.tickets.get, host.tickets.close and host.tickets.whoami. See
// README.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/kitsoki/kitsoki/plugin"
)

// tracker is the plugin's state: it lives as long as the process, which
// kitsoki keeps for the whole run.
type tracker struct {
	mu      sync.Mutex
	tickets map[string]map[string]any
	next    int
}

func (t *tracker) create(_ context.Context, req *plugin.HostInvokeRequest) (map[string]any, error) {
	title, _ := req.Args["title"].(string)
	if title == "" {
		return nil, &plugin.Error{Code: plugin.CodeInvalidParams, Message: "create: args.title is required"}
	}
	priority := "normal"
	if p, ok := req.Args["priority"].(string); ok && p != "" {
		priority = p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	id := fmt.Sprintf("T-%d", t.next)
	tk := map[string]any{"id": id, "title": title, "priority": priority, "status": "open", "opened_in": req.Context.StatePath}
	t.tickets[id] = tk
	fmt.Fprintf(os.Stderr, "tickets: opened %s (%s)\n", id, title)
	return tk, nil
}

func (t *tracker) get(_ context.Context, req *plugin.HostInvokeRequest) (map[string]any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, _ := req.Args["id"].(string)
	tk, ok := t.tickets[id]
	if !ok {
		return nil, plugin.Errorf("no ticket %q", id)
	}
	return tk, nil
}

func (t *tracker) close(_ context.Context, req *plugin.HostInvokeRequest) (map[string]any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, _ := req.Args["id"].(string)
	tk, ok := t.tickets[id]
	if !ok {
		return nil, plugin.Errorf("no ticket %q", id)
	}
	tk["status"] = "closed"
	return tk, nil
}

// whoami reports the token the plugin was given (env: TICKETS_TOKEN). A
// real plugin would not return its credentials; this one does to show that
// kitsoki masks a declared ${VAR} secret in the trace and in cassettes
// whatever a plugin answers.
func whoami(context.Context, *plugin.HostInvokeRequest) (map[string]any, error) {
	return map[string]any{"user": "tickets-bot", "token": os.Getenv("TICKETS_TOKEN")}, nil
}

func main() {
	t := &tracker{tickets: map[string]map[string]any{}}
	idArgs := json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"string"}},"additionalProperties":false}`)
	ops := map[string]plugin.HostOp{
		"create": {Description: "Open a ticket; returns it.", Run: t.create,
			ArgsSchema: json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string"},` +
				`"priority":{"enum":["low","normal","high"]}},"additionalProperties":false}`)},
		"get":    {Description: "Read a ticket by id.", Run: t.get, ArgsSchema: idArgs},
		"close":  {Description: "Close a ticket by id.", Run: t.close, ArgsSchema: idArgs},
		"whoami": {Description: "The account the plugin's token belongs to.", Run: whoami, ArgsSchema: json.RawMessage(`{"type":"object"}`)},
	}
	if err := plugin.ServeHost(ops); err != nil {
		fmt.Fprintln(os.Stderr, "tickets-go:", err)
		os.Exit(1)
	}
}
