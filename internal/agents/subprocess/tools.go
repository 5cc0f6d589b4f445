package subprocess

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/plugin"
)

// InvokeTool sends one agent_tool.invoke call on the plugin's process
// (starting it if none runs, like Ask) and returns the raw result. If ctx
// ends first, the plugin is sent a $/cancelRequest notification naming
// the call's id, so it can stop the work; the call is never retried.
// Failures are *agent.AskError as for Call: a JSON-RPC error response
// (such as -32601, method not found) keeps its *jsonrpc2.Error as Err.
func (a *Agent) InvokeTool(ctx context.Context, req *plugin.AgentToolRequest) (json.RawMessage, error) {
	return a.call(ctx, plugin.MethodAgentToolInvoke, req, true)
}

// cancelNotifyTimeout bounds how long a caller that stopped waiting waits
// for its $/cancelRequest notification to be written.
const cancelNotifyTimeout = time.Second

// cancelInPlugin tells p to stop working on call id. A process that is
// gone needs no telling, so errors are ignored. A plugin that does not read
// its stdin holds the write up until the connection ends; the caller waits
// for it cancelNotifyTimeout at most.
func cancelInPlugin(p *process, id uint64) {
	params := strconv.AppendUint([]byte(`{"id":`), id, 10)
	params = append(params, '}')
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = p.conn.notify(plugin.MethodCancelRequest, params)
	}()
	t := time.NewTimer(cancelNotifyTimeout)
	defer t.Stop()
	select {
	case <-written:
	case <-t.C:
	}
}

// ProcessEventKind says what happened to a plugin process.
type ProcessEventKind int

// The process events an Agent reports to its watchers.
const (
	// ProcessStarted: a process was spawned and is serving.
	ProcessStarted ProcessEventKind = iota + 1
	// ProcessCrashed: a process ended without Close (it exited, closed
	// stdout, or was killed for breaking the protocol).
	ProcessCrashed
	// ProcessSpawnFailed: starting a process failed.
	ProcessSpawnFailed
)

// ProcessEvent is one start, crash or failed spawn. Seq numbers the spawn
// attempts of an agent from 1: events of an earlier attempt can arrive
// after those of a later one, so a watcher orders them by Seq.
type ProcessEvent struct {
	Kind ProcessEventKind
	Seq  uint64
	PID  int
	// Detail describes a crash or failed spawn as a plugin_crash detail
	// does (cause, exit status, stderr tail; secrets redacted).
	Detail string
}

// Watch calls f with every later process event of the agent, on a
// goroutine of the agent's, until the returned stop is called.
func (a *Agent) Watch(f func(ProcessEvent)) (stop func()) {
	return a.watch.add(f)
}

// Start spawns the plugin's process unless one is running: a crashed
// plugin's supervisor uses it to recover without waiting for a call.
func (a *Agent) Start() error {
	_, err := a.live()
	return err
}

// follow reports process p (spawn attempt seq) as started, then as
// crashed if it ends without Close.
func (a *Agent) follow(p *process, seq uint64) {
	a.watch.emit(ProcessEvent{Kind: ProcessStarted, Seq: seq, PID: p.pid})
	<-p.conn.done
	<-p.exited
	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	if stopping || !a.watch.any() {
		return
	}
	cause := "connection closed"
	if c := p.causeErr(); c != nil {
		cause = describe(c)
	}
	detail := redact(p.crashDetail(cause), a.decl.Secrets)
	a.watch.emit(ProcessEvent{Kind: ProcessCrashed, Seq: seq, PID: p.pid, Detail: detail})
}

// watchers is an agent's set of process-event observers.
type watchers struct {
	mu    sync.Mutex
	next  int
	fns   map[int]func(ProcessEvent)
	spawn uint64 // spawn attempts so far
}

func (w *watchers) add(f func(ProcessEvent)) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(ProcessEvent){}
	}
	w.next++
	id := w.next
	w.fns[id] = f
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
	}
}

// spawned counts a spawn attempt and returns its number.
func (w *watchers) spawned() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spawn++
	return w.spawn
}

func (w *watchers) any() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.fns) > 0
}

func (w *watchers) emit(ev ProcessEvent) {
	w.mu.Lock()
	fns := make([]func(ProcessEvent), 0, len(w.fns))
	for _, f := range w.fns {
		fns = append(fns, f)
	}
	w.mu.Unlock()
	for _, f := range fns {
		f(ev)
	}
}
