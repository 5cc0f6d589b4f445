package hostplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/plugin"
)

// DescribeTimeout bounds how long kitsoki validate waits for one plugin's
// host.describe answer (the process start included).
const DescribeTimeout = 30 * time.Second

// Check asks every host plugin of st for its ops (host.describe) and
// checks each invoke the story makes of it: the op must be one the plugin
// lists, a with: map without templates must satisfy the op's
// args_schema, and its bind: sources must be fields of the op's
// result_schema (errors when the schema is closed, warnings when open). A plugin that answers host.describe with method not found
// (-32601) is not checked. A plugin that cannot be described (it does not
// start, crashes, answers garbage, or exceeds DescribeTimeout) is an error
// at its declaration. Each plugin is started once and stopped before Check
// returns.
func Check(ctx context.Context, st *story.Story, opts Options) (diags, warns []story.Diagnostic) {
	for _, name := range st.HostPluginNames() {
		decl := st.HostPlugins[name]
		ops, described, err := describe(ctx, decl, st.App.ID, opts)
		if err != nil {
			diags = append(diags, story.Diagnostic{Pos: decl.Pos, Path: "host_plugins." + name,
				Message: fmt.Sprintf("host.describe failed: %v", err)})
			continue
		}
		if !described {
			continue
		}
		e, w := checkCalls(st, decl, ops)
		diags, warns = append(diags, e...), append(warns, w...)
	}
	byPos(diags)
	byPos(warns)
	return diags, warns
}

func byPos(ds []story.Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// describedOp is one op of a host.describe answer, its schema compiled.
type describedOp struct {
	info   plugin.HostOpInfo
	schema *schema.Schema // nil without args_schema
	// results are the properties of its result_schema (nil without one);
	// closed says the schema allows no others.
	results []string
	closed  bool
}

// describe starts the plugin, asks host.describe and stops it. described
// is false when the plugin does not implement the method.
func describe(ctx context.Context, decl *story.HostPlugin, appID string, opts Options) (map[string]*describedOp, bool, error) {
	hd, err := New(decl, appID, opts)
	if err != nil {
		return nil, false, err
	}
	defer hd.Close()
	ctx, cancel := context.WithTimeout(ctx, DescribeTimeout)
	defer cancel()
	raw, err := hd.conn.Call(ctx, plugin.MethodHostDescribe, struct{}{})
	if err != nil {
		var rpcErr *jsonrpc2.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == plugin.CodeMethodNotFound {
			return nil, false, nil
		}
		return nil, false, hd.callError(err)
	}
	var res plugin.HostDescribeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, false, fmt.Errorf("unmarshal host.describe result: %w (want {\"ops\": [{\"name\", \"description\", \"args_schema\"}]})", err)
	}
	ops := map[string]*describedOp{}
	for i, op := range res.Ops {
		if _, dup := ops[op.Name]; dup {
			return nil, false, fmt.Errorf("host.describe: ops[%d]: op %q is listed twice", i, op.Name)
		}
		d := &describedOp{info: op}
		if len(op.ArgsSchema) > 0 && string(op.ArgsSchema) != "null" {
			s, err := schema.CompileDocument(decl.Name+"."+op.Name+" args_schema", op.ArgsSchema)
			if err != nil {
				return nil, false, fmt.Errorf("host.describe: ops[%d] (%s): args_schema: %w", i, op.Name, err)
			}
			d.schema = s
		}
		if len(op.ResultSchema) > 0 && string(op.ResultSchema) != "null" {
			if err := d.readResults(decl.Name, op.ResultSchema); err != nil {
				return nil, false, fmt.Errorf("host.describe: ops[%d] (%s): result_schema: %w", i, op.Name, err)
			}
		}
		ops[op.Name] = d
	}
	return ops, true, nil
}

// readResults takes the fields of an op's result_schema: a JSON Schema
// object's properties, closed by "additionalProperties": false.
func (d *describedOp) readResults(plugin string, raw json.RawMessage) error {
	if _, err := schema.CompileDocument(plugin+"."+d.info.Name+" result_schema", raw); err != nil {
		return err
	}
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *json.RawMessage           `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	d.results = []string{}
	for k := range s.Properties {
		d.results = append(d.results, k)
	}
	slices.Sort(d.results)
	d.closed = s.AdditionalProperties != nil && strings.TrimSpace(string(*s.AdditionalProperties)) == "false"
	return nil
}

// checkBinds checks the bind: sources of an invoke of op against its
// result_schema: an error for a field a closed schema does not list, a
// warning for one an open schema does not.
func (d *describedOp) checkBinds(in *story.Invoke, path string) (errs, warns []story.Diagnostic) {
	if d.results == nil || len(d.results) == 0 && !d.closed {
		return nil, nil
	}
	for _, b := range in.Bind {
		var keys []string
		if b.Template != nil {
			for _, r := range b.Template.ResultReads() {
				keys = append(keys, r.Key)
			}
		} else {
			k, _, _ := strings.Cut(strings.SplitN(b.Path, "[", 2)[0], ".")
			keys = append(keys, k)
		}
		for _, k := range keys {
			if slices.Contains(d.results, k) || (in.Background && k == "job_id") {
				continue
			}
			diag := story.Diagnostic{Pos: in.Pos, Path: path + ".bind." + b.Key,
				Message: fmt.Sprintf("bind reads %q, which %s does not return by its result_schema%s (it returns: %s)",
					k, in.Name, story.DidYouMean(k, d.results), strings.Join(d.results, ", "))}
			if d.closed {
				errs = append(errs, diag)
			} else {
				diag.Message += "; it may bind nothing"
				warns = append(warns, diag)
			}
		}
	}
	return errs, warns
}

// checkCalls checks every invoke of decl's handler in st against ops.
func checkCalls(st *story.Story, decl *story.HostPlugin, ops map[string]*describedOp) (diags, warns []story.Diagnostic) {
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	slices.Sort(names)
	eachInvoke(st, func(in *story.Invoke, path string) {
		if hp, ok := st.HostPluginFor(in.Name); !ok || hp != decl || isTemplated(in.Name) {
			return
		}
		op := strings.TrimPrefix(strings.TrimPrefix(in.Name, decl.Name), ".")
		d, ok := ops[op]
		if !ok {
			diags = append(diags, story.Diagnostic{Pos: in.Pos, Path: path + ".invoke",
				Message: fmt.Sprintf("invoke %q: host plugin %s has no op %q (its ops: %s)%s",
					in.Name, decl.Name, op, quoteList(names), story.DidYouMean(op, names))})
			return
		}
		e, w := d.checkBinds(in, path)
		diags, warns = append(diags, e...), append(warns, w...)
		if d.schema == nil || in.With == nil || !in.With.IsLiteral() {
			return
		}
		v, err := in.With.Eval(expr.Env{})
		if err != nil {
			return
		}
		b, err := json.Marshal(v) // YAML scalars to the JSON types the schema sees
		if err != nil {
			return
		}
		if _, err := d.schema.ValidateJSON(b); err != nil {
			diags = append(diags, story.Diagnostic{Pos: in.Pos, Path: path + ".with",
				Message: fmt.Sprintf("invoke %q: with: does not match the args_schema host plugin %s describes for op %q: %v",
					in.Name, decl.Name, op, err)})
		}
	})
	return diags, warns
}

// eachInvoke calls fn for every invoke effect of st with its key path, in
// a stable order.
func eachInvoke(st *story.Story, fn func(in *story.Invoke, path string)) {
	states := make([]string, 0, len(st.States))
	for n := range st.States {
		states = append(states, n)
	}
	slices.Sort(states)
	// A background invoke's on_complete: chain holds invokes too.
	var visit func(in *story.Invoke, path string)
	visit = func(in *story.Invoke, path string) {
		fn(in, path)
		for i, e := range in.OnComplete {
			if e.Invoke != nil {
				visit(e.Invoke, path+".on_complete["+strconv.Itoa(i)+"]")
			}
		}
	}
	for _, sn := range states {
		s := st.States[sn]
		for i, e := range s.OnEnter {
			if e.Invoke != nil {
				visit(e.Invoke, "states."+sn+".on_enter["+strconv.Itoa(i)+"]")
			}
		}
		intents := make([]string, 0, len(s.On))
		for n := range s.On {
			intents = append(intents, n)
		}
		slices.Sort(intents)
		for _, in := range intents {
			for j, arm := range s.On[in] {
				for k, e := range arm.Effects {
					if e.Invoke != nil {
						visit(e.Invoke, fmt.Sprintf("states.%s.on.%s[%d].effects[%d]", sn, in, j, k))
					}
				}
			}
		}
	}
}

func isTemplated(s string) bool { return strings.Contains(s, "{{") }

func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
