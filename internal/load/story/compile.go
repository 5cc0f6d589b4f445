package story

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"go.yaml.in/yaml/v3"
)

// job is one compilation deferred to the workers. run is pure (it reads
// only its captured node and file, never the loader), so jobs run in
// parallel with each other and with the loader; assign stores the result
// and runs afterwards, in job order, on the loader's goroutine.
type job struct {
	run    func() (any, *Diagnostic)
	assign func(any)

	val  any // run's results
	diag *Diagnostic
}

// addJob defers a compilation; flushJobs hands it to the workers. Jobs are
// carved out of blocks of jobBlock, one allocation per block.
func (l *loader) addJob(run func() (any, *Diagnostic), assign func(any)) {
	if len(l.jobFree) == 0 {
		l.jobFree = make([]job, jobBlock)
	}
	j := &l.jobFree[0]
	l.jobFree = l.jobFree[1:]
	j.run, j.assign = run, assign
	l.jobs = append(l.jobs, j)
}

const jobBlock = 64

// flushJobs hands the jobs added since the last call to the workers.
func (l *loader) flushJobs() {
	l.work.submit(l.jobs[l.submitted:]...)
	l.submitted = len(l.jobs)
}

// runJobs waits for every deferred guard, template, prompt and schema to be
// compiled (helping with what is left), then assigns the results and
// records the errors in job order.
func (l *loader) runJobs() {
	l.flushJobs()
	l.work.finish()
	for _, j := range l.jobs {
		if j.diag != nil {
			l.diags = append(l.diags, *j.diag)
			continue
		}
		j.assign(j.val)
	}
	l.jobs, l.submitted = nil, 0
	for _, fn := range l.finalizers {
		fn()
	}
	l.finalizers = nil
}

// workers runs jobs, in the order submitted, on a fixed set of goroutines.
// A job's results are stored in it.
type workers struct {
	mu     sync.Mutex
	cond   sync.Cond // signalled when jobs are added or closed is set
	tasks  []*job
	next   int // tasks[next:] are waiting to run
	closed bool
	wg     sync.WaitGroup
}

// startWorkers starts n (at least one) goroutines waiting for jobs.
func startWorkers(n int) *workers {
	w := &workers{}
	w.cond.L = &w.mu
	for range max(n, 1) {
		w.wg.Go(w.drain)
	}
	return w
}

// submit queues jobs.
func (w *workers) submit(tasks ...*job) {
	if len(tasks) == 0 {
		return
	}
	w.mu.Lock()
	w.tasks = append(w.tasks, tasks...)
	w.mu.Unlock()
	if len(tasks) == 1 {
		w.cond.Signal()
	} else {
		w.cond.Broadcast()
	}
}

// drain runs jobs until the queue is closed and empty.
func (w *workers) drain() {
	for {
		w.mu.Lock()
		for w.next == len(w.tasks) && !w.closed {
			w.cond.Wait()
		}
		if w.next == len(w.tasks) {
			w.mu.Unlock()
			return
		}
		t := w.tasks[w.next]
		w.tasks[w.next] = nil
		w.next++
		w.mu.Unlock()
		t.val, t.diag = t.run()
		t.run = nil // what it captured (nodes, files) is not needed any more
	}
}

// finish closes the queue, runs jobs on the calling goroutine too until
// none is left, and waits for the running ones to end.
func (w *workers) finish() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cond.Broadcast()
	w.drain()
	w.wg.Wait()
}

// compileGuard compiles a when: expression at node n.
func (l *loader) compileGuard(f *file, n *yaml.Node, path string, assign func(*expr.Guard)) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || d.Tag == "!!null" {
		l.errAt(f, d, path, "expected a guard expression, got %s%s", kindNameOrNull(d), shapeHint(path, d))
		return
	}
	names := l.namesAt(f, d)
	l.addJob(func() (any, *Diagnostic) {
		g, err := l.cache.guard(d.Value, names)
		if err != nil {
			return nil, compileDiag(f, d, path, "invalid guard", err)
		}
		if g.UsesMenu() {
			return nil, menuDiag(f, d, path, "a guard")
		}
		return g, nil
	}, func(v any) {
		g := v.(*expr.Guard)
		assign(g)
		if len(g.WorldReads()) > 0 {
			l.guards = append(l.guards, guardRef{f: f, n: d, path: path, g: g})
		}
	})
}

// guardRef is a compiled guard that reads world keys, to check once every
// file is loaded.
type guardRef struct {
	f    *file
	n    *yaml.Node
	path string
	g    *expr.Guard
}

// compileValue compiles a scalar at node n as a value template.
func (l *loader) compileValue(f *file, n *yaml.Node, path string, assign func(*expr.Value)) {
	l.compileValueIn(f, n, path, false, assign)
}

// menuDiag refuses the computed menu outside a view: it is built only while
// a state's view (or say:) renders, so elsewhere it would always be empty.
func menuDiag(f *file, n *yaml.Node, path, what string) *Diagnostic {
	return &Diagnostic{Pos: posOf(f, n), Path: path, Message: what + " cannot read the computed menu " +
		"(menu, available(), blocked(), blocked_reason(), intent_status()): it exists only while a view renders; " +
		"use it in view:, a view element's when:, say: or an arm's view:, and test world keys here"}
}

// compileValueIn is compileValue; inView allows the computed menu (a view
// element's when:) and marks the story as using it.
func (l *loader) compileValueIn(f *file, n *yaml.Node, path string, inView bool, assign func(*expr.Value)) {
	d := deref(n)
	src := d.Value
	if isNull(d) {
		src = ""
	}
	names := l.namesAt(f, d)
	l.addJob(func() (any, *Diagnostic) {
		v, err := l.cache.value(src, names)
		if err != nil {
			return nil, compileDiag(f, d, path, "invalid template", err)
		}
		if v.UsesMenu() && !inView {
			return nil, menuDiag(f, d, path, "a value template")
		}
		return v, nil
	}, func(v any) {
		x := v.(*expr.Value)
		if x.UsesMenu() {
			l.st.UsesMenu = true
		}
		assign(x)
	})
}

// compileText compiles a scalar at node n as a text template.
func (l *loader) compileText(f *file, n *yaml.Node, path string, assign func(*expr.Text)) {
	src, ok := l.str(f, n, path)
	if !ok {
		return
	}
	d := deref(n)
	names := l.namesAt(f, d)
	l.addJob(func() (any, *Diagnostic) {
		t, err := l.cache.text(src, names)
		if err != nil {
			return nil, compileDiag(f, d, path, "invalid template", err)
		}
		t.WorldReads() // found here, on a worker, for checkTextReads
		return t, nil
	}, func(v any) {
		t := v.(*expr.Text)
		if t.UsesMenu() {
			l.st.UsesMenu = true
		}
		assign(t)
		if len(t.WorldReads()) > 0 {
			l.texts = append(l.texts, textRef{f: f, n: d, path: path, t: t, names: names})
		}
	})
}

// compileTree compiles a YAML value whose strings are value templates. When
// the tree fails, the failing string is located so the error points at it.
func (l *loader) compileTree(f *file, n *yaml.Node, path string, assign func(*expr.Tree)) {
	names := l.namesAt(f, n)
	l.addJob(func() (any, *Diagnostic) {
		var v any
		if n != nil {
			var err error
			if v, err = decodeValue(n); err != nil {
				return nil, &Diagnostic{Pos: posOf(f, n), Path: path, Message: fmt.Sprintf("cannot decode value: %v", err)}
			}
		}
		t, err := expr.CompileTree(v, expr.WithValues(func(src string) (*expr.Value, error) { return l.cache.value(src, names) }))
		if err == nil {
			if t.UsesMenu() {
				return nil, menuDiag(f, deref(n), path, "a value template")
			}
			return t, nil
		}
		if d := locateTreeErr(f, n, path); d != nil {
			return nil, d
		}
		return nil, compileDiag(f, deref(n), path, "invalid template", err)
	}, func(v any) { assign(v.(*expr.Tree)) })
}

// locateTreeErr compiles the strings under n one by one and returns the
// diagnostic of the first failing one, or nil when none fails on its own.
func locateTreeErr(f *file, n *yaml.Node, path string) *Diagnostic {
	d := deref(n)
	if d == nil {
		return nil
	}
	switch d.Kind {
	case yaml.ScalarNode:
		if d.Tag != "!!str" {
			return nil
		}
		if _, err := expr.CompileValue(d.Value); err != nil {
			return compileDiag(f, d, path, "invalid template", err)
		}
	case yaml.SequenceNode:
		for i, c := range d.Content {
			if diag := locateTreeErr(f, c, indexPath(path, i)); diag != nil {
				return diag
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(d.Content); i += 2 {
			if diag := locateTreeErr(f, d.Content[i+1], joinPath(path, deref(d.Content[i]).Value)); diag != nil {
				return diag
			}
		}
	}
	return nil
}

func kindNameOrNull(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	return kindName(n)
}

func posOf(f *file, n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: f.rel}
	}
	return Pos{File: f.rel, Line: n.Line, Col: n.Column}
}

// compileDiag describes a compile error at node n. When the error carries a
// position inside the source and the scalar's text can be matched to the
// file, the diagnostic points at the exact character.
func compileDiag(f *file, n *yaml.Node, path, what string, err error) *Diagnostic {
	var ce *expr.CompileError
	if errors.As(err, &ce) && ce.Col > 0 {
		if p, ok := scalarOffsetPos(f, n, max(ce.Line, 1), ce.Col); ok {
			return &Diagnostic{Pos: p, Path: path, Message: what + ": " + ce.Msg}
		}
	}
	return &Diagnostic{Pos: posOf(f, n), Path: path, Message: fmt.Sprintf("%s: %v", what, err)}
}

// scalarOffsetPos maps a 1-based (line, col) inside scalar n's value to a
// file position. It handles single-line plain and quoted scalars and literal
// block scalars (|), and checks the mapping against the file text; other
// styles (folded, multi-line flow scalars) report ok=false.
func scalarOffsetPos(f *file, n *yaml.Node, line, col int) (Pos, bool) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return Pos{}, false
	}
	srcLines := strings.Split(n.Value, "\n")
	if line > len(srcLines) {
		return Pos{}, false
	}
	style := n.Style &^ (yaml.TaggedStyle | yaml.FlowStyle)
	switch {
	case style == 0 || style == yaml.SingleQuotedStyle || style == yaml.DoubleQuotedStyle:
		if len(srcLines) != 1 {
			return Pos{}, false
		}
		q := 0
		if style != 0 {
			q = 1
		}
		raw := []rune(f.line(n.Line))
		start := n.Column - 1 + q
		if start < 0 || start > len(raw) || !strings.HasPrefix(string(raw[start:]), n.Value) {
			return Pos{}, false
		}
		return Pos{File: f.rel, Line: n.Line, Col: n.Column + q + col - 1}, true
	case style == yaml.LiteralStyle:
		fl := n.Line + line
		raw := f.line(fl)
		text := strings.TrimLeft(raw, " ")
		want := strings.TrimRight(srcLines[line-1], "\r")
		// A line may be indented past the block's indentation; that
		// indentation is part of the value (and of col).
		wantText := strings.TrimLeft(want, " ")
		if wantText == "" || !strings.HasPrefix(text, wantText) {
			return Pos{}, false
		}
		indent := len([]rune(raw)) - len([]rune(text)) - (len(want) - len(wantText))
		return Pos{File: f.rel, Line: fl, Col: indent + col}, true
	}
	return Pos{}, false
}

// agentWith handles the with: map of a host.agent.* invoke: it notes a
// literal with.agent and with.provider for the whole-story checks, and compiles literal prompt files
// and schemas once into the story.
func (l *loader) agentWith(f *file, with *yaml.Node, path string, ref *effectRef) {
	es, _ := l.entries(f, with, path)
	for _, e := range es {
		d := deref(e.val)
		if d == nil || d.Kind != yaml.ScalarNode || d.Tag != "!!str" || d.Value == "" || isTemplated(d.Value) {
			continue
		}
		p := joinPath(path, e.name)
		switch e.name {
		case "agent":
			ref.withAgent, ref.withAgentNode = d.Value, d
		case "provider":
			ref.withProvider, ref.withProviderNode = d.Value, d
		case "prompt":
			l.loadPrompt(f, d, p, false)
		case "prompt_path":
			l.loadPrompt(f, d, p, true)
		case "schema":
			ref.withSchema, ref.withSchemaNode = d.Value, d
			l.loadSchema(f, d, p)
		}
	}
	// Kitsoki's task form: acceptance.schema and context.prompt are
	// compiled once, like with.schema and with.prompt.
	for _, e := range es {
		sub := deref(e.val)
		if sub == nil || sub.Kind != yaml.MappingNode || (e.name != "acceptance" && e.name != "context") {
			continue
		}
		inner, _ := l.entries(f, sub, joinPath(path, e.name))
		for _, ie := range inner {
			d := deref(ie.val)
			if d == nil || d.Kind != yaml.ScalarNode || d.Tag != "!!str" || d.Value == "" || isTemplated(d.Value) {
				continue
			}
			p := joinPath(joinPath(path, e.name), ie.name)
			switch {
			case e.name == "acceptance" && ie.name == "schema":
				l.loadSchema(f, d, p)
			case e.name == "context" && ie.name == "prompt":
				l.loadPrompt(f, d, p, false)
			}
		}
	}
}

// pathLike matches a value that looks like a file name rather than prompt
// text: no whitespace, and a file extension.
var pathLike = regexp.MustCompile(`^[^\s]+\.[A-Za-z0-9]{1,8}$`)

// loadPrompt compiles a literal with.prompt / with.prompt_path into
// Story.Prompts, keyed by the value as written. A value naming a readable
// file is the file's content; otherwise with.prompt is inline text and
// with.prompt_path is an error.
func (l *loader) loadPrompt(f *file, n *yaml.Node, path string, mustBeFile bool) {
	raw := n.Value
	if l.promptSeen[raw] {
		return
	}
	l.promptSeen[raw] = true
	store := func(t *expr.Text) { l.st.Prompts[raw] = t }
	abs, name := l.resolve(raw), raw
	if ov := l.overlayFile(raw); ov != "" {
		abs, name = ov, ov // the overlay's file shadows the story's
	}
	real, wsErr := l.ws.Resolve(l.dir, name)
	if wsErr != nil {
		// A path outside the workspace is never read. with.prompt_path
		// always names a file; with.prompt names one when a file is there.
		var oe *workspace.OutsideError
		if !errors.As(wsErr, &oe) {
			real = abs
		} else if st, err := l.ws.Stat(abs); mustBeFile || (err == nil && st.Mode().IsRegular()) {
			l.errAt(f, n, path, "%v", wsErr)
			return
		} else {
			real = ""
		}
	}
	var st fs.FileInfo
	statErr := errors.New("outside the workspace")
	if real != "" {
		st, statErr = l.ws.Stat(real)
	}
	if statErr == nil && st.Mode().IsRegular() {
		b, err := l.ws.Read(real, raw)
		if err != nil {
			l.errAt(f, n, path, "%s", fileErr("prompt file", raw, err))
			return
		}
		rel := raw
		if r, err := filepath.Rel(l.dir, abs); err == nil {
			rel = filepath.ToSlash(r)
		}
		l.assemblePrompt(f, n, path, string(b), tmplFile{abs: real, rel: rel}, func(src string) { l.compilePromptFile(f, n, path, raw, rel, src, store) })
		return
	}
	if mustBeFile {
		reason := "not a regular file"
		if statErr != nil {
			reason = unwrapPathErr(statErr).Error()
		}
		l.errAt(f, n, path, "cannot read prompt file %q: %s", raw, reason)
		return
	}
	if pathLike.MatchString(raw) {
		l.warnAt(f, n, path, "%q looks like a file name but no such file exists in the story directory; it is sent as inline prompt text", raw)
	}
	l.assemblePrompt(f, n, path, n.Value, tmplFile{}, func(src string) {
		l.compileText(f, withValue(n, src), path, func(t *expr.Text) {
			if t.UsesMenu() {
				l.diags = append(l.diags, *menuDiag(f, n, path, "a prompt"))
				return
			}
			store(t)
		})
	})
}

// withValue is scalar n with its value replaced (n itself when it is the
// same), keeping its position for messages.
func withValue(n *yaml.Node, v string) *yaml.Node {
	if d := deref(n); d != nil && d.Value == v {
		return n
	}
	d := deref(n)
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: d.Line, Column: d.Column, Style: d.Style}
}

// loadSchema compiles a literal with.schema path into Story.Schemas. Each
// path is compiled once, by a job; when it fails, every place naming it
// gets the error.
func (l *loader) loadSchema(f *file, n *yaml.Node, path string) {
	raw := n.Value
	use := schemaUse{f: f, n: n, path: path}
	if uses, ok := l.schemaUses[raw]; ok {
		*uses = append(*uses, use)
		return
	}
	uses := &[]schemaUse{use}
	l.schemaUses[raw] = uses
	sc, name := l.st.SchemaCompiler, raw
	if f.dir != "" && f.dir != l.dir {
		// An imported story's schema: compiled in its own directory, as
		// that story names it (rewritePaths made raw relative to ours).
		c, err := l.importCompiler(f.dir)
		if err != nil {
			l.errAt(f, n, path, "%v", err)
			return
		}
		sc = c
		if r, err := filepath.Rel(f.dir, l.resolve(raw)); err == nil {
			name = filepath.ToSlash(r)
		}
	}
	l.addJob(func() (any, *Diagnostic) {
		s, err := sc.Compile(name)
		if err != nil {
			return err, nil
		}
		return s, nil
	}, func(v any) {
		switch v := v.(type) {
		case *schema.Schema:
			l.st.Schemas[raw] = v
		case error:
			for _, u := range *uses {
				l.errAt(u.f, u.n, u.path, "%v", v)
			}
		}
	})
}

// schemaUse is a place naming a with.schema path.
type schemaUse struct {
	f    *file
	n    *yaml.Node
	path string
}

// importCompiler returns the schema compiler rooted in an imported story's
// directory, made on first use.
func (l *loader) importCompiler(dir string) (*schema.Compiler, error) {
	if c, ok := l.st.importCompilers[dir]; ok {
		return c, nil
	}
	c, err := schemaCompiler(l.ws, dir)
	if err != nil {
		return nil, err
	}
	if l.st.importCompilers == nil {
		l.st.importCompilers = map[string]*schema.Compiler{}
	}
	l.st.importCompilers[dir] = c
	return c, nil
}

// compilePromptFile compiles the text of prompt file raw (rel names it in
// messages), its file references already resolved.
func (l *loader) compilePromptFile(f *file, n *yaml.Node, path, raw, rel, src string, store func(*expr.Text)) {
	l.addJob(func() (any, *Diagnostic) {
		t, err := l.cache.text(src, nil)
		if err == nil {
			if t.UsesMenu() {
				return nil, menuDiag(f, n, path, fmt.Sprintf("prompt file %q", raw))
			}
			return t, nil
		}
		var ce *expr.CompileError
		if errors.As(err, &ce) && ce.Col > 0 {
			return nil, &Diagnostic{Pos: Pos{File: rel, Line: max(ce.Line, 1), Col: ce.Col}, Path: path,
				Message: "invalid template in prompt file: " + ce.Msg}
		}
		return nil, &Diagnostic{Pos: posOf(f, n), Path: path,
			Message: fmt.Sprintf("invalid template in prompt file %q: %v", raw, err)}
	}, func(v any) { store(v.(*expr.Text)) })
}
