// Package starlark is the host.starlark.run handler: a small author-written
// Starlark script (go.starlark.net) run in a deterministic sandbox, its
// typed inputs and outputs declared by a <script>.star.yaml sidecar
// (package sidecar), its only outside world a narrow ctx: the call's
// inputs, a read-only world snapshot, a read-only view of the workspace
// (ctx.fs), a few allow-listed read-only probes (ctx.probe) and HTTP
// through an HTTP cassette (ctx.http). The interpreter has no clock, no
// randomness and no environment; a step limit and a heap bound end a
// runaway script.
package starlark

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/sidecar"
	"github.com/kitsoki/kitsoki/internal/load/story"
	starmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Name is the handler's invoke name.
const Name = "host.starlark.run"

// Limits.
const (
	// DefaultMaxSteps is the step limit of one call.
	DefaultMaxSteps = 10_000_000
	// DefaultMaxMemory bounds how far the Go heap may grow during one call.
	DefaultMaxMemory = 256 << 20
	// MaxFSRead is the largest file ctx.fs.read returns.
	MaxFSRead = 1 << 20
	// MaxProbeOutput is the most probe output kept.
	MaxProbeOutput = 1 << 20
)

// Options configure the handler of a run.
type Options struct {
	// HTTP serves ctx.http; nil refuses every request (no cassette).
	HTTP HTTPClient
	// Probe answers ctx.probe instead of running the command (a flow's
	// inspect cassette); nil runs it.
	Probe Prober
	// MaxSteps is the step limit per call; 0 is DefaultMaxSteps.
	MaxSteps uint64
	// MaxMemory is the heap growth bound per call in bytes; 0 is
	// DefaultMaxMemory.
	MaxMemory uint64
	// Logger receives the scripts' print() lines (debug level); nil
	// discards them.
	Logger *slog.Logger
}

// Handler is host.starlark.run for one story.
type Handler struct {
	st   *story.Story
	opts Options

	env      starlark.StringDict // predeclared: json, math, the guards
	progs    sync.Map            // real path -> *compiled
	sidecars sync.Map            // real path -> *parsedSidecar
}

type parsedSidecar struct {
	sum [32]byte
	sc  *sidecar.Sidecar
}

// sidecar parses a sidecar once per content.
func (h *Handler) sidecar(real, script string, data []byte) (*sidecar.Sidecar, error) {
	sum := sha256.Sum256(data)
	if c, ok := h.sidecars.Load(real); ok && c.(*parsedSidecar).sum == sum {
		return c.(*parsedSidecar).sc, nil
	}
	sc, err := sidecar.Parse(data, script+sidecar.Suffix)
	if err != nil {
		return nil, err
	}
	h.sidecars.Store(real, &parsedSidecar{sum: sum, sc: sc})
	return sc, nil
}

type compiled struct {
	sum  [32]byte
	prog *starlark.Program
}

// New returns the handler for st.
func New(st *story.Story, opts Options) *Handler {
	if opts.HTTP == nil {
		opts.HTTP = denyAll{}
	}
	if opts.MaxSteps == 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MaxMemory == 0 {
		opts.MaxMemory = DefaultMaxMemory
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{st: st, opts: opts, env: guardEnv()}
}

// Register installs the handler on h.
func Register(h *host.Host, st *story.Story, opts Options) { h.Register(Name, New(st, opts)) }

// Error is a domain error of a call: the effect's on_error fires and
// world.last_error holds its text.
type Error struct {
	Script string // as written in with.script
	Kind   string // input, output, script, steps, memory, path
	Msg    string
}

func (e *Error) Error() string {
	if e.Script == "" {
		return Name + ": " + e.Msg
	}
	return Name + ": " + e.Script + ": " + e.Msg
}

// Error kinds.
const (
	KindPath   = "path"   // with.script is missing, outside the workspace, or has no sidecar
	KindInput  = "input"  // an input does not fit the sidecar
	KindOutput = "output" // the returned dict does not fit the sidecar
	KindScript = "script" // the script failed: syntax, fail(), a bad ctx use, an HTTP miss
	KindSteps  = "steps"  // the step limit was reached
	KindMemory = "memory" // the heap bound was reached
)

// fileOptions: no set, no while, no top-level control flow, no global
// reassignment, no recursion.
func fileOptions() *syntax.FileOptions { return &syntax.FileOptions{} }

// starmathModule is the math module (numbers only: nothing to guard).
func starmathModule() starlark.Value { return starmath.Module }

// Invoke runs the script with.script names.
func (h *Handler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	script, _ := call.Args["script"].(string)
	fail := func(kind, format string, a ...any) (*host.Result, error) {
		return &host.Result{Err: &Error{Script: script, Kind: kind, Msg: fmt.Sprintf(format, a...)}}, nil
	}
	keys := make([]string, 0, len(call.Args))
	for k := range call.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "call" && k != "script" && k != "inputs" {
			return fail(KindInput, "with.%s is not a key of %s (it takes script and inputs)", k, Name)
		}
	}
	if script == "" {
		return fail(KindPath, "with.script must name a .star file, got %v", call.Args["script"])
	}
	var inputs map[string]any
	switch in := call.Args["inputs"].(type) {
	case nil:
		inputs = map[string]any{}
	case map[string]any:
		inputs = in
	default:
		return fail(KindInput, "with.inputs must be a mapping of input names to values, got %s", sidecar.TypeName(in))
	}
	real, err := h.st.Workspace.Resolve(h.st.Dir, script)
	if err != nil {
		return fail(KindPath, "%v", err)
	}
	src, err := h.st.Workspace.Read(real, script)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: script %s: %w", Name, script, err)
		}
		return nil, fmt.Errorf("%s: read script %s: %w", Name, script, err)
	}
	scData, err := h.st.Workspace.Read(real+sidecar.Suffix, script+sidecar.Suffix)
	if err != nil {
		return nil, fmt.Errorf("%s: read sidecar %s%s: %w", Name, script, sidecar.Suffix, err)
	}
	sc, err := h.sidecar(real, script, scData)
	if err != nil {
		return fail(KindPath, "%v", err)
	}
	if err := sc.CheckInputs(inputs); err != nil {
		return fail(KindInput, "%v", err)
	}
	prog, err := h.program(real, script, src)
	if err != nil {
		return fail(KindScript, "%v", err)
	}
	r := &run{h: h, ctx: ctx, call: call, script: script}
	out, err := r.exec(prog, inputs)
	if err != nil {
		var de *Error
		if errors.As(err, &de) {
			de.Script = script
			return &host.Result{Err: de}, nil
		}
		return nil, err
	}
	if err := sc.CheckOutputs(out); err != nil {
		return fail(KindOutput, "%v", err)
	}
	if len(r.exchanges) > 0 {
		out[sidecar.ReservedOutput] = r.exchanges
	}
	return &host.Result{Data: out}, nil
}

// program compiles src once per content.
func (h *Handler) program(real, name string, src []byte) (*starlark.Program, error) {
	sum := sha256.Sum256(src)
	if c, ok := h.progs.Load(real); ok && c.(*compiled).sum == sum {
		return c.(*compiled).prog, nil
	}
	f, err := fileOptions().Parse(name, src, 0)
	if err != nil {
		return nil, err
	}
	if err := guardFile(f); err != nil {
		return nil, err
	}
	prog, err := starlark.FileProgram(f, h.env.Has)
	if err != nil {
		return nil, err
	}
	h.progs.Store(real, &compiled{sum: sum, prog: prog})
	return prog, nil
}

// run is one call's execution.
type run struct {
	h         *Handler
	ctx       context.Context
	call      *host.Call
	script    string
	mem       *budget
	exchanges []any // {method, url, status} per HTTP call
}

// memoryError words a call stopped by the memory bound: where in the
// script, what would not fit, and the limit.
func (r *run) memoryError(err error) *Error {
	pos := ""
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if fr := ee.CallStack[i]; fr.Pos.Filename() != "<builtin>" {
				pos = fr.Pos.String() + ": "
				break
			}
		}
	}
	return &Error{Kind: KindMemory, Msg: fmt.Sprintf("%sexceeded the memory limit of %s a call: %s",
		pos, mib(r.mem.limit), r.mem.exceeded)}
}

func (r *run) exec(prog *starlark.Program, inputs map[string]any) (map[string]any, error) {
	opts := r.h.opts
	thread := &starlark.Thread{
		Name: r.script,
		Print: func(_ *starlark.Thread, msg string) {
			opts.Logger.Debug("starlark print", "script", r.script, "msg", msg)
		},
		Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
			return nil, errors.New("load() is not available: a script is one file, with json and math predeclared")
		},
	}
	var why sync.Mutex
	reason := ""
	cancel := func(kind string) {
		why.Lock()
		if reason == "" {
			reason = kind
		}
		why.Unlock()
		thread.Cancel(kind)
	}
	mem := newBudget(opts.MaxMemory)
	r.mem = mem
	thread.SetLocal(budgetKey, mem)
	thread.SetMaxExecutionSteps(min(stepCheckEvery, opts.MaxSteps))
	thread.OnMaxSteps = func(t *starlark.Thread) {
		if t.Steps >= opts.MaxSteps {
			cancel(KindSteps)
			return
		}
		ok, every := mem.step()
		if !ok {
			cancel(KindMemory)
			return
		}
		t.SetMaxExecutionSteps(min(t.Steps+every, opts.MaxSteps))
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-r.ctx.Done():
			cancel("context")
		case <-done:
		}
	}()

	globals, err := prog.Init(thread, r.h.env)
	var ret starlark.Value
	if err == nil {
		mainFn, ok := globals["main"].(starlark.Callable)
		switch {
		case globals["main"] == nil:
			return nil, &Error{Kind: KindScript, Msg: "the script defines no main(ctx) function"}
		case !ok:
			return nil, &Error{Kind: KindScript, Msg: fmt.Sprintf("main is a %s, not a function main(ctx)", globals["main"].Type())}
		}
		var sctx starlark.Value
		if sctx, err = r.newCtx(inputs); err != nil {
			if mem.exceeded != "" {
				return nil, r.memoryError(err)
			}
			return nil, &Error{Kind: KindInput, Msg: err.Error()}
		}
		ret, err = starlark.Call(thread, mainFn, starlark.Tuple{sctx}, nil)
	}
	if err != nil {
		why.Lock()
		k := reason
		why.Unlock()
		switch {
		case k == KindSteps:
			return nil, &Error{Kind: KindSteps, Msg: fmt.Sprintf("exceeded the step limit of %d steps (an endless or very long loop?)", opts.MaxSteps)}
		case k == KindMemory || mem.exceeded != "":
			return nil, r.memoryError(err)
		case k == "context":
			return nil, fmt.Errorf("%s %s: %w", Name, r.script, context.Cause(r.ctx))
		}
		return nil, &Error{Kind: KindScript, Msg: scriptError(err)}
	}
	d, ok := ret.(*starlark.Dict)
	if !ok {
		return nil, &Error{Kind: KindOutput, Msg: fmt.Sprintf("main(ctx) must return a dict of outputs, got %s", ret.Type())}
	}
	gs := &goSizer{limit: mem.limit + 1, memo: map[any]int64{}}
	if err := mem.charge(gs.size(d, 0), func() string { return "converting the returned dict" }); err != nil {
		return nil, r.memoryError(err)
	}
	v, err := toGo(d, 0)
	if err != nil {
		return nil, &Error{Kind: KindOutput, Msg: "the returned dict: " + err.Error()}
	}
	return v.(map[string]any), nil
}

// scriptError words an evaluation error: where in the script, then what.
func scriptError(err error) string {
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		pos := ""
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if fr := ee.CallStack[i]; fr.Pos.Filename() != "<builtin>" {
				pos = fr.Pos.String() + ": "
				break
			}
		}
		return pos + ee.Msg
	}
	return err.Error()
}

const heapSample = "/memory/classes/heap/objects:bytes"

// heapBytes is the live Go heap (objects not yet swept included).
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: heapSample}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// ctx surface --------------------------------------------------------------

// object is a value with a fixed set of attributes: ctx and its parts. Any
// other attribute is Starlark's "has no .x field or method" error.
type object struct {
	name  string
	attrs map[string]starlark.Value
}

func (o *object) String() string        { return "<" + o.name + ">" }
func (o *object) Type() string          { return o.name }
func (o *object) Freeze()               {}
func (o *object) Truth() starlark.Bool  { return true }
func (o *object) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: %s", o.name) }
func (o *object) Attr(name string) (starlark.Value, error) {
	return o.attrs[name], nil
}
func (o *object) AttrNames() []string {
	out := make([]string, 0, len(o.attrs))
	for k := range o.attrs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// charge charges the call's budget for a value a ctx helper makes.
func (r *run) charge(n int64, what func() string) error {
	if r.mem == nil {
		return nil
	}
	return r.mem.charge(n, what)
}

func (r *run) newCtx(inputs map[string]any) (starlark.Value, error) {
	if err := r.charge(goValueSize(inputs, r.mem.limit+1), func() string { return "the inputs" }); err != nil {
		return nil, err
	}
	in, err := toStarlark(inputs, 0)
	if err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	in.Freeze()
	return &object{name: "ctx", attrs: map[string]starlark.Value{
		"inputs": in,
		"world": &object{name: "ctx.world", attrs: map[string]starlark.Value{
			"get": starlark.NewBuiltin("get", r.worldGet),
		}},
		"http": &object{name: "ctx.http", attrs: map[string]starlark.Value{
			"get":  starlark.NewBuiltin("get", r.httpGet),
			"post": starlark.NewBuiltin("post", r.httpPost),
		}},
		"fs": &object{name: "ctx.fs", attrs: map[string]starlark.Value{
			"read":   starlark.NewBuiltin("read", r.fsRead),
			"exists": starlark.NewBuiltin("exists", r.fsExists),
			"glob":   starlark.NewBuiltin("glob", r.fsGlob),
		}},
		"probe": starlark.NewBuiltin("probe", r.probe),
	}}, nil
}

func (r *run) worldGet(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var key string
	if err := starlark.UnpackPositionalArgs("ctx.world.get", args, kwargs, 1, &key); err != nil {
		return nil, err
	}
	v, ok := r.call.World[key]
	if !ok || v == nil {
		return starlark.None, nil
	}
	if err := r.charge(goValueSize(v, r.mem.limit+1), func() string { return fmt.Sprintf("ctx.world.get(%q)", key) }); err != nil {
		return nil, err
	}
	sv, err := toStarlark(v, 0)
	if err != nil {
		return nil, fmt.Errorf("ctx.world.get(%q): %w", key, err)
	}
	sv.Freeze()
	return sv, nil
}

// confine resolves a path a script names: relative to the workspace root,
// never absolute, never leaving the workspace (symlinks included).
func (r *run) confine(fn, p string) (string, error) {
	ws := r.h.st.Workspace
	if ws.IsZero() {
		return "", fmt.Errorf("%s(%q): the story has no workspace", fn, p)
	}
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%s(%q): give a path relative to the workspace root %s", fn, p, ws.Dir())
	}
	real, err := ws.Resolve(ws.Dir(), p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", fn, err)
	}
	return real, nil
}

func (r *run) fsRead(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var p string
	if err := starlark.UnpackPositionalArgs("ctx.fs.read", args, kwargs, 1, &p); err != nil {
		return nil, err
	}
	real, err := r.confine("ctx.fs.read", p)
	if err != nil {
		return nil, err
	}
	// Through the workspace root: a symlink swapped in after confine
	// checked the path cannot lead the read out of the workspace.
	f, err := r.h.st.Workspace.Open(real)
	if err != nil {
		var oe *workspace.OutsideError
		if errors.As(err, &oe) {
			return nil, fmt.Errorf("ctx.fs.read: %w", err)
		}
		return nil, fmt.Errorf("ctx.fs.read(%q): %w", p, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ctx.fs.read(%q): %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("ctx.fs.read(%q): not a regular file", p)
	}
	if fi.Size() > MaxFSRead {
		return nil, fmt.Errorf("ctx.fs.read(%q): the file is %d bytes; ctx.fs.read returns at most %d (1 MiB)", p, fi.Size(), MaxFSRead)
	}
	if err := r.charge(fi.Size()+boxSize, func() string { return fmt.Sprintf("ctx.fs.read(%q)", p) }); err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("ctx.fs.read(%q): %w", p, err)
	}
	return starlark.String(buf[:n]), nil
}

func (r *run) fsExists(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var p string
	if err := starlark.UnpackPositionalArgs("ctx.fs.exists", args, kwargs, 1, &p); err != nil {
		return nil, err
	}
	real, err := r.confine("ctx.fs.exists", p)
	if err != nil {
		return nil, err
	}
	_, err = r.h.st.Workspace.StatInside(real)
	return starlark.Bool(err == nil), nil
}

func (r *run) fsGlob(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pat string
	if err := starlark.UnpackPositionalArgs("ctx.fs.glob", args, kwargs, 1, &pat); err != nil {
		return nil, err
	}
	ws := r.h.st.Workspace
	if _, err := r.confine("ctx.fs.glob", strings.ReplaceAll(strings.ReplaceAll(pat, "*", "x"), "?", "x")); err != nil {
		return nil, err
	}
	matches, err := ws.Glob(filepath.Join(ws.Dir(), filepath.FromSlash(pat)))
	if err != nil {
		return nil, fmt.Errorf("ctx.fs.glob(%q): %w", pat, err)
	}
	if err := r.charge(satMul(int64(len(matches)), slotSize+boxSize+64), func() string { return fmt.Sprintf("ctx.fs.glob(%q)", pat) }); err != nil {
		return nil, err
	}
	var out []starlark.Value
	for _, m := range matches {
		if _, err := ws.Resolve(ws.Dir(), m); err != nil {
			continue // a match leading out of the workspace is not listed
		}
		rel, err := filepath.Rel(ws.Dir(), m)
		if err != nil {
			continue
		}
		out = append(out, starlark.String(filepath.ToSlash(rel)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].(starlark.String) < out[j].(starlark.String) })
	return starlark.NewList(out), nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
