package story

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
	"github.com/kitsoki/kitsoki/internal/load/compose"
	"go.yaml.in/yaml/v3"
)

// Option configures Load.
type Option func(*options)

type options struct {
	lookupEnv func(string) (string, bool)
	workspace string
	fsys      fs.FS    // WithFS: read from it instead of the OS
	fsDir     string   // where fsys is mounted
	stubbed   bool     // WithStubbedHosts
	provided  []string // WithProvidedHandlers
	replayed  []string // WithReplayedHandlers

	storiesPath []string // WithStoriesPath
	library     string   // WithLibrary

	promptOverlay string // WithPromptOverlay
}

// WithLibrary names the story library shipped with kitsoki: the last
// place @kitsoki/NAME is looked up (DIR/NAME/app.yaml), after every search
// path. Its files may be read although they are outside the workspace.
func WithLibrary(dir string) Option {
	return func(o *options) { o.library = dir }
}

// WithStoriesPath adds directories to the front of the search path of
// @kitsoki/NAME import sources (the --stories-path flag): NAME resolves to
// DIR/NAME/app.yaml in the first directory holding it, before
// KITSOKI_STORIES_PATH and $KITSOKI_REPO/stories.
func WithStoriesPath(dirs ...string) Option {
	return func(o *options) { o.storiesPath = append(o.storiesPath, dirs...) }
}

// WithSearchPath sets the directories @kitsoki/NAME is looked up in
// before KITSOKI_STORIES_PATH and $KITSOKI_REPO/stories to exactly dirs,
// replacing those of every WithStoriesPath before it (a worker loading a
// story bundle looks imports up where the client did, not where its own
// flags say).
func WithSearchPath(dirs ...string) Option {
	return func(o *options) { o.storiesPath = append([]string(nil), dirs...) }
}

// WithStubbedHosts loads the story for `kitsoki test flows`, where flow
// fixtures answer host handlers with stubs and cassettes: an invoke of a
// handler kitsoki does not build (it needs Jira, an IDE, slidey, …) is not
// refused, since a fixture may stub it. Runs and `kitsoki validate` load
// without it and refuse such an invoke unless a host plugin serves it.
func WithStubbedHosts() Option {
	return func(o *options) { o.stubbed = true }
}

// WithProvidedHandlers names handlers the caller registers on the run's
// host itself (kitsoki's WithHandler, a cassette's host episodes), so
// an invoke of one is not refused as a handler nothing provides.
func WithProvidedHandlers(names ...string) Option {
	return func(o *options) { o.provided = append(o.provided, names...) }
}

// WithReplayedHandlers names the handlers a cassette's episodes answer:
// each name provides itself and every name under it (an episode for
// host.git answers host.git.open_pr), as the replay installs them.
func WithReplayedHandlers(names ...string) Option {
	return func(o *options) { o.replayed = append(o.replayed, names...) }
}

// WithWorkspace sets the workspace every file the story reads must stay
// inside (the --workspace flag). Without it the workspace is the git work
// tree enclosing the root file, else the root file's directory (see
// internal/base/workspace).
func WithWorkspace(dir string) Option {
	return func(o *options) { o.workspace = dir }
}

// WithLookupEnv sets the function used to resolve ${VAR} references in
// agent_plugins env: and headers: values (default os.LookupEnv).
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = f }
}

// WithoutSecrets loads a story without resolving its secrets: no
// environment variable is read, and every ${VAR} stands for the empty
// string (so an unset one is no error, and the story holds no secret).
// For callers that only look at the story's shape (kitsoki viz): a story
// loaded so must not be run.
func WithoutSecrets() Option {
	return func(o *options) { o.lookupEnv = func(string) (string, bool) { return "", true } }
}

// WithFS makes Load read the story from fsys instead of the operating
// system: fsys holds the contents of the directory dir, and every path
// outside dir does not exist. The path given to Load (and every path in the
// story) is still an OS path, resolved as usual; it must lie under dir.
// Every file the story names (includes, prompt files, system prompts,
// schemas and their $refs, plugin manifests) is read from fsys. Nothing is
// opened or written, so tests and fuzz targets can load stories built in
// memory (a fstest.MapFS) without touching the disk.
//
// The workspace is dir, unless WithWorkspace names a directory of fsys
// under it; the git work tree is not looked for. Paths are confined to it
// as on the operating system, with the same messages, but checked
// lexically: no symlink is resolved (see internal/base/workspace). The size
// limit applies as on the operating system.
func WithFS(fsys fs.FS, dir string) Option {
	return func(o *options) { o.fsys, o.fsDir = fsys, dir }
}

// RootFileName is the root file a story directory holds.
const RootFileName = "app.yaml"

// RootFile is the root file a story path names: the path itself, or, for
// a directory, its app.yaml (as typed: dir/app.yaml). Every command that
// takes a story path takes a story directory so.
func RootFile(path string) string { return rootFile(path, workspace.Root{}) }

func rootFile(path string, ws workspace.Root) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if fi, err := ws.Stat(abs); err == nil && fi.IsDir() {
		return filepath.Join(path, RootFileName)
	}
	return path
}

// Load reads the story whose root file is path (a story directory means
// its app.yaml), with its includes, checks it, and compiles its guards,
// templates, prompt files and schemas. On failure it returns a *LoadError
// listing every problem found.
func Load(path string, opts ...Option) (*Story, error) {
	o := options{lookupEnv: os.LookupEnv}
	for _, opt := range opts {
		opt(&o)
	}
	if o.lookupEnv == nil {
		o.lookupEnv = os.LookupEnv
	}
	// ws reads the files (the zero Root reads the operating system's) and,
	// once decided below, confines them.
	var ws workspace.Root
	if o.fsys != nil {
		var err error
		if ws, err = workspace.NewFS(o.fsys, o.fsDir, o.workspace); err != nil {
			return nil, &LoadError{Diagnostics: []Diagnostic{{Pos: Pos{File: filepath.Base(path)}, Message: err.Error()}}}
		}
	}
	typed := path
	path = rootFile(path, ws)
	abs, err := filepath.Abs(path)
	if err == nil {
		_, err = ws.Stat(abs)
	}
	if err != nil {
		msg := fmt.Sprintf("cannot read story file: %v", unwrapPathErr(err))
		if path != typed && errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("%s is a directory without an %s: name the story's root file", typed, RootFileName)
		}
		// The path as typed: a base name alone does not say which file.
		return nil, &LoadError{Diagnostics: []Diagnostic{{Pos: Pos{File: path}, Message: msg}}}
	}
	dir := filepath.Dir(abs)
	if o.fsys == nil {
		if ws, err = workspace.For(abs, o.workspace); err != nil {
			return nil, &LoadError{Diagnostics: []Diagnostic{{Pos: Pos{File: filepath.Base(abs)}, Message: err.Error()}}}
		}
	}
	if o.library != "" && o.fsys == nil {
		ws = ws.With(o.library)
	}
	if _, err := ws.Resolve(dir, abs); err != nil {
		var oe *workspace.OutsideError
		if errors.As(err, &oe) {
			oe.Name = path
		}
		return nil, &LoadError{Diagnostics: []Diagnostic{{Pos: Pos{File: filepath.Base(abs)}, Message: "story file " + err.Error()}}}
	}
	l := &loader{
		opts:        o,
		dir:         dir,
		ws:          ws,
		fileOrder:   map[string]int{},
		loaded:      map[string]bool{},
		declared:    map[string]bool{},
		wrappers:    map[string]*importWrap{},
		exitTargets: map[*yaml.Node]bool{}, exitDeferred: map[*yaml.Node]*deferredExit{},
		promptSeen: map[string]bool{},
		schemaUses: map[string]*[]schemaUse{},
		st: &Story{
			Dir:       dir,
			File:      abs,
			Workspace: ws,
			Agents:    map[string]*Persona{},
			Plugins:   map[string]agent.Declaration{},
			Providers: map[string]agent.Provider{},
			Intents:   map[string]*Intent{},
			Exits:     map[string]*Exit{},
			States:    map[string]*State{},
			Schemas:   map[string]*schema.Schema{},
			Prompts:   map[string]*expr.Text{},
		},
	}
	sc, err := schemaCompiler(ws, dir)
	if err != nil {
		return nil, &LoadError{Diagnostics: []Diagnostic{{Pos: Pos{File: filepath.Base(abs)}, Message: err.Error()}}}
	}
	l.st.SchemaCompiler = sc
	l.run(abs)
	sortDiagnostics(l.diags, l.fileOrder)
	sortDiagnostics(l.warns, l.fileOrder)
	if len(l.diags) > 0 {
		sc.Close()
		for _, c := range l.st.importCompilers {
			c.Close()
		}
		return nil, &LoadError{Diagnostics: l.diags, Warnings: l.warns}
	}
	l.st.Warnings = l.warns
	l.st.PromptOverlay = l.promptOverlay
	l.st.promptAssembler = &loader{dir: l.dir, ws: l.ws, promptOverlay: l.promptOverlay, promptShared: l.promptShared, importShared: l.importShared, wrappers: l.wrappers}
	return l.st, nil
}

// Close releases what the story holds open (the schema directory handle).
func (s *Story) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, c := range s.importCompilers {
		errs = append(errs, c.Close())
	}
	if s.SchemaCompiler != nil {
		errs = append(errs, s.SchemaCompiler.Close())
	}
	return errors.Join(errs...)
}

// schemaCompiler returns the compiler of the schemas under dir, the story
// directory, reading where ws reads.
func schemaCompiler(ws workspace.Root, dir string) (*schema.Compiler, error) {
	fsys, mount := ws.FS()
	if fsys == nil {
		return schema.NewCompiler(dir)
	}
	// dir holds the root file, which is inside the workspace, so it is
	// under the mount directory.
	rel, err := filepath.Rel(mount, dir)
	if err != nil {
		return nil, fmt.Errorf("schema root %q: %w", dir, err)
	}
	sub, err := fs.Sub(fsys, filepath.ToSlash(rel))
	if err != nil {
		return nil, fmt.Errorf("schema root %q: %w", dir, err)
	}
	return schema.NewCompilerFS(sub, dir), nil
}

// loader holds the state of one Load call.
type loader struct {
	opts  options
	dir   string
	ws    workspace.Root // every file read must stay inside it, and is read through it
	st    *Story
	diags []Diagnostic
	warns []Diagnostic

	fileOrder map[string]int  // rel path -> load order, for sorting diagnostics
	loaded    map[string]bool // abs paths already loaded
	queue     []*file         // included files waiting to be loaded
	hash      hash.Hash       // Story.ContentHash, summed as the story's own files are read
	declared  map[string]bool // "app", "root": declared once across files

	stateOrder []string // declaration order of States keys
	rootRef    *nodeRef
	rootParsed bool // the root file parsed, so a missing root: is worth reporting
	rootPos    Pos

	targets   []*targetRef
	effects   []*effectRef
	armKeys   []*nodeRef // on: intent keys, for the undeclared-intent warning
	worldRefs []*nodeRef // relevant_world and exits.requires entries
	slotRefs  []*nodeRef // relevant_slots entries
	guards    []guardRef // compiled guards that read world keys by name
	texts     []textRef  // compiled text templates that read world keys by name
	binds     []bindRef  // bind: entries, checked against their handler's results
	exitOrder []exitDecl // declaration order of exits, for the __exit__ states

	work       *workers                // runs parses and jobs while files are read
	jobs       []*job                  // deferred compilations, in the order added
	jobFree    []job                   // where addJob takes the next job from
	submitted  int                     // jobs handed to work so far
	finalizers []func()                // run after the compiled results are assigned
	promptSeen map[string]bool         // with.prompt values already handled
	schemaUses map[string]*[]schemaUse // with.schema paths → where they are named

	toolNames map[string]string // exposed plugin tool name → where it was declared

	promptShared  []string            // prompts.shared directories, absolute (prompts.go)
	importShared  map[string][]string // an imported story's prompts.shared, by its directory
	promptOverlay string              // the prompt overlay directory, absolute ("" for none)
	lateTemplates []func()            // prompt assemblies that wait for the imports
	contextPath   *nodeRef            // app.context_path
	proposalAt    *nodeRef            // the first proposals: (proposals.go)
	deciderAgent  *nodeRef            // decider.agent, checked at finish (decider.go)

	phases       *phaseState   // phase_templates:, phases:, checkpoint_intents: (phases.go)
	phaseSink    *phaseYAML    // set while an imported file's phases are expanded (phases_unit.go)
	menuRefs     []*nodeRef    // states' menu: entries, checked at finish (roomkeys.go)
	annotateRefs []annotateRef // media elements' annotate_intent:, checked at finish

	contextualRefs []contextualRef // contextual_routing intents, checked at finish (contextual.go)
	laneRefs       []nodeRef       // contextual_routing help_chat and meta_chat, checked at finish

	synonymRefs      []*synonymRef    // intents' synonyms, checked against their slots
	defaultIntents   []*nodeRef       // states' default_intent, checked at finish
	offRampStates    []*nodeRef       // states with an agent_off_ramp, checked at finish
	offRamps         []*nodeRef       // agent_off_ramp.agent values, checked at finish
	overlayAgents    []*nodeRef       // off_path.agent and meta_modes.*.agent, checked at finish
	overlayRefs      []*overlayRef    // off_path and meta_modes, checked at finish
	metaTools        []metaTools      // meta_modes' tools: and cwd: overrides
	overlayPersonas  []overlayPersona // off_path.persona
	routingAgent     *nodeRef         // routing.agent, checked against agent_plugins
	extractAgent     *nodeRef         // routing.extract_llm_agent when extraction is on
	personaProviders []*nodeRef       // agents.<name>.provider, checked against providers
	readOnlyRooms    []*nodeRef       // states with write_mode: read_only, checked against their invokes
	// imports (imports.go)
	importFiles  []*unitFile                  // folded imported documents, loaded after the story's own files
	wrappers     map[string]*importWrap       // import wrapper states
	exitToChecks []nodeRef                    // root-level imports.<alias>.exits.<name>.to
	exitTargets  map[*yaml.Node]bool          // targets an exit mapping wrote (checked at its to:)
	exitDeferred map[*yaml.Node]*deferredExit // targets an imported importer's exit to: wrote, naming a state of a story importing it
	exportChecks []nodeRef                    // root-level intents.export names
	hostChecks   []hostCheck                  // hosts: declared imports
	exportRefs   []nodeRef                    // exports.intents of the story itself
	rootHosts    []string                     // hosts: of the story's own files
	rootStates   map[string]bool              // states of the story's own files
	unitFiles    map[string]*file             // imported files by path, parsed once
	unitReported map[*file]bool               // imported files whose parse errors are reported
	// foreign holds the values of exit sets appended to imported arms:
	// they are compiled with the chain of the names they are written in.
	foreign map[*yaml.Node]*compose.Chain

	cache compileCache // each distinct template compiled once (compilecache.go)

	lookahead int // files parsed ahead of the one being read
}

// nodeRef is a value to check once every file is loaded.
type nodeRef struct {
	f     *file
	n     *yaml.Node
	path  string
	value string
	state *State
}

// exitDecl remembers where an exit was declared.
type exitDecl struct {
	x *Exit
	f *file
	n *yaml.Node
}

// run loads the root file and its includes, then runs the checks that need
// the whole story.
//
// The work is pipelined over GOMAXPROCS workers: an included file starts
// parsing as soon as the include: naming it is read, the loader reads each
// file as soon as it is parsed, and the compilations a file defers (guards,
// templates, prompt files, schemas) start as soon as the file is read, while
// later files are still being parsed and read. Files are still read one at a
// time, in the order they were found, so diagnostics and declaration order
// do not depend on the scheduling.
func (l *loader) run(abs string) {
	l.lookahead = runtime.GOMAXPROCS(0)
	l.work = startWorkers(l.lookahead)
	l.hash = sha256.New()
	root := l.newFile(abs)
	if l.opts.promptOverlay != "" {
		l.setOverlay(nil, nil, l.opts.promptOverlay)
	}
	root.parse()
	l.loadOwn(root, true)
	// Included files are read a generation at a time, in order (files
	// included by included files form the next one).
	for len(l.queue) > 0 {
		batch := l.queue
		l.queue = nil
		for i, f := range batch {
			l.parseAhead(batch[i+1:])
			f.parse()
			l.loadOwn(f, false)
		}
	}
	l.expandPhases()
	l.loadImported()
	for _, late := range l.lateTemplates {
		late()
	}
	l.loadContext()
	l.runJobs()
	l.finish()
	l.st.ContentHash = "sha256:" + hex.EncodeToString(l.hash.Sum(nil))
}

// loadOwn loads one of the story's own files (parsed): it adds the file's
// content to the content hash, reads the file into the story, hands its
// compilations to the workers and drops its tree and content. What the
// checks and jobs need they hold themselves; a diagnostic that needs a line
// of the file reads it again (file.line).
func (l *loader) loadOwn(f *file, isRoot bool) {
	// Story.ContentHash: the files in load order, each as its name, its
	// length and its bytes.
	fmt.Fprintf(l.hash, "%s\x00%d\x00", f.rel, len(f.data))
	l.hash.Write(f.data)
	l.loadFile(f, isRoot)
	l.flushJobs()
	f.doc, f.data = nil, nil
}

func (l *loader) newFile(abs string) *file {
	rel, err := filepath.Rel(l.dir, abs)
	if err != nil {
		rel = abs
	}
	f := &file{rel: filepath.ToSlash(rel), abs: abs, ws: l.ws}
	l.loaded[abs] = true
	if _, ok := l.fileOrder[f.rel]; !ok {
		l.fileOrder[f.rel] = len(l.fileOrder)
	}
	return f
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the problems yaml.v3's parser (not its scanner)
// reports; it gives their line 0-based.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document",
	"found undefined tag handle",
}

func parserProblem(msg string) bool {
	return slices.ContainsFunc(parserProblems, func(p string) bool { return strings.HasPrefix(msg, p) })
}

// parseFile reads and parses one file into its top-level node (nil for an
// empty file or on error) and the problems found. It touches nothing but f,
// so files can be parsed concurrently.
func parseFile(f *file) (*yaml.Node, []Diagnostic) {
	data, err := f.ws.Read(f.abs, f.rel)
	if err != nil {
		var tl *workspace.TooLargeError
		if errors.As(err, &tl) {
			return nil, []Diagnostic{{Pos: Pos{File: f.rel}, Message: err.Error()}}
		}
		return nil, []Diagnostic{{Pos: Pos{File: f.rel}, Message: fmt.Sprintf("cannot read story file: %v", unwrapPathErr(err))}}
	}
	f.data = data
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, []Diagnostic{yamlDiag(f, err)}
	}
	var ee *yamlnode.ExpansionError
	if err := yamlnode.CheckExpansion(&doc, 0); errors.As(err, &ee) {
		return nil, []Diagnostic{{Pos: Pos{File: f.rel, Line: ee.Line, Col: ee.Column}, Message: ee.Reason()}}
	}
	var diags []Diagnostic
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		diags = append(diags, Diagnostic{Pos: Pos{File: f.rel, Line: extra.Line, Col: extra.Column},
			Message: "a story file holds one YAML document; found a second one"})
	} else if !errors.Is(err, io.EOF) {
		diags = append(diags, yamlDiag(f, err))
	}
	root := deref(&doc)
	if isNull(root) {
		// A document holding nothing ("---" alone, or a bare null) is an
		// empty file. (YAML places the null of "---" on the line after it,
		// which the file may not have.)
		return nil, diags
	}
	return root, diags
}

// parseData parses a file's content again (it parsed before): its
// top-level node, nil when it holds nothing.
func parseData(data []byte) *yaml.Node {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil
	}
	if root := deref(&doc); !isNull(root) {
		return root
	}
	return nil
}

// parseAhead starts parsing, on the workers, the first files of next
// that are not started: as many as there are workers, so parsing runs
// ahead of the loader without holding every file's tree at once.
func (l *loader) parseAhead(next []*file) {
	for _, f := range next[:min(len(next), l.lookahead)] {
		if !f.submitted {
			f.submitted = true
			l.work.submit(&job{run: f.parseJob})
		}
	}
}

// parseJob is parse as a job for the workers.
func (f *file) parseJob() (any, *Diagnostic) {
	f.parse()
	return nil, nil
}

// parse parses the file once, storing the result in it. Whichever of the
// worker it was queued on and the loader needing it comes first does the
// work; the other waits for it.
func (f *file) parse() {
	f.parseOnce.Do(func() { f.doc, f.parseDiags = parseFile(f) })
}

// yamlDiag turns a YAML syntax error into a diagnostic carrying its line.
func yamlDiag(f *file, err error) Diagnostic {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = strings.Join(te.Errors, "; ")
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if parserProblem(m[2]) {
			// yaml.v3 counts a parser error's line from 0 (a scanner
			// error's it counts from 1): the line meant is the next one.
			line++
		}
		// An error at the end of the input is placed on the last line,
		// not on the one after it.
		line = min(line, lineCount(f.data))
		return Diagnostic{Pos: Pos{File: f.rel, Line: line, Col: 1}, Message: "YAML syntax error: " + m[2]}
	}
	return Diagnostic{Pos: Pos{File: f.rel}, Message: "YAML syntax error: " + strings.TrimPrefix(msg, "yaml: ")}
}

// lineCount is how many lines YAML sees in data: \n, \r and \r\n each
// end one.
func lineCount(data []byte) int {
	n := 1 + bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r"))
	return n - bytes.Count(data, []byte("\r\n"))
}

var topKeys = &keySpec{
	v1: []string{"app", "hosts", "agents", "agent_plugins", "host_plugins", "host_interfaces", "providers", "world", "intents", "root", "exits", "include", "states", "routing",
		"imports", "exports", "off_path", "meta_modes", "phase_templates", "phases", "checkpoint_intents", "prompts", "proposals", "decider"},
}

// loadFile reads one story file's top-level keys into the story.
func (l *loader) loadFile(f *file, isRoot bool) {
	doc := f.doc
	l.diags = append(l.diags, f.parseDiags...)
	if doc == nil {
		if isRoot && len(l.diags) == 0 {
			l.diags = append(l.diags, Diagnostic{Pos: Pos{File: f.rel}, Message: "story file is empty"})
		}
		return
	}
	if isRoot {
		l.rootParsed, l.rootPos = true, l.pos(f, doc)
	}
	top, ok := l.fields(f, doc, "", topKeys)
	if !ok {
		return
	}
	if e, ok := top.get("app"); ok {
		l.loadApp(f, e)
	} else if isRoot {
		l.errAt(f, doc, "", "app: is required (app: {id: my-story})")
	}
	if e, ok := top.get("prompts"); ok {
		l.loadPromptsConfig(f, e, isRoot) // before any prompt is read
	}
	if e, ok := top.get("hosts"); ok {
		l.loadHosts(f, e)
	}
	if e, ok := top.get("agents"); ok {
		l.loadAgents(f, e)
	}
	if e, ok := top.get("agent_plugins"); ok {
		l.loadPlugins(f, e)
	}
	if e, ok := top.get("host_plugins"); ok {
		l.loadHostPlugins(f, e)
	}
	if e, ok := top.get("host_interfaces"); ok {
		l.loadInterfaces(f, e)
	}
	if e, ok := top.get("providers"); ok {
		l.loadProviders(f, e)
	}
	if e, ok := top.get("world"); ok {
		l.loadWorld(f, e)
	}
	if e, ok := top.get("intents"); ok {
		l.loadIntents(f, e.val, "intents", l.st.Intents, true)
	}
	if e, ok := top.get("exits"); ok {
		l.loadExits(f, e)
	}
	if e, ok := top.get("root"); ok {
		l.loadRoot(f, e)
	}
	if e, ok := top.get("states"); ok {
		l.loadStates(f, e)
	}
	if e, ok := top.get("routing"); ok {
		l.loadRouting(f, e)
	}
	if e, ok := top.get("off_path"); ok {
		l.loadOffPath(f, e)
	}
	if e, ok := top.get("meta_modes"); ok {
		l.loadMetaModes(f, e)
	}
	l.loadStoryBlocks(f, top)
	if e, ok := top.get("include"); ok {
		l.loadInclude(f, e)
	}
	if e, ok := top.get("exports"); ok {
		l.loadExports(f, e)
	}
	if e, ok := top.get("imports"); ok {
		l.loadImports(f, e)
	}
}

// loadStoryBlocks reads the story-wide blocks that stamp out or drive
// rooms: phase_templates:, phases:, checkpoint_intents:, proposals: and
// decider:.
func (l *loader) loadStoryBlocks(f *file, top fieldSet) {
	for _, b := range []struct {
		key  string
		load func(*file, entry)
	}{
		{"phase_templates", l.loadPhaseTemplates}, {"phases", l.loadPhasesBlock}, {"checkpoint_intents", l.loadCheckpointIntents},
		{"proposals", l.loadProposals}, {"decider", l.loadDecider},
	} {
		if e, ok := top.get(b.key); ok {
			b.load(f, e)
		}
	}
}

// loadImported loads the documents folded from imports, once the story's
// own files are loaded (so their declarations win over an import's).
func (l *loader) loadImported() {
	if len(l.importFiles) == 0 {
		return
	}
	l.rootHosts = slices.Clone(l.st.Hosts)
	l.rootStates = make(map[string]bool, len(l.st.States))
	for k := range l.st.States {
		l.rootStates[k] = true
	}
	// An imported file's content is parsed again for each import folding
	// it (unitDoc); it is dropped after the last.
	reparses := map[*file]int{}
	for _, uf := range l.importFiles {
		if uf.doc == nil {
			reparses[uf.f]++
		}
	}
	// Each imported file is parsed, folded and loaded in turn, and dropped
	// once loaded, so the collector takes its tree back while the rest
	// loads.
	for i, uf := range l.importFiles {
		l.reparseAhead(l.importFiles[i+1:])
		l.importFiles[i] = nil
		if uf.wrapper != "" && l.rootStates[uf.wrapper] {
			l.errAt(uf.f, uf.key, uf.path, "import alias %q is also a state of this story: rename the alias or the state", uf.wrapper)
			dropReparsed(uf, reparses)
			continue
		}
		doc := l.foldedDoc(uf)
		dropReparsed(uf, reparses)
		l.rewritePaths(doc, uf.dir)
		f := &file{rel: uf.f.rel, abs: uf.f.abs, ws: uf.f.ws, doc: doc, dir: uf.dir, imported: true, chain: uf.chain}
		f.parseOnce.Do(func() {})
		l.loadFile(f, false)
		l.flushJobs()
		f.doc = nil
	}
	l.importFiles = nil
}

// dropReparsed counts uf's parse of its file as done, and drops the file's
// content once no import is left to parse it.
func dropReparsed(uf *unitFile, reparses map[*file]int) {
	if uf.doc != nil {
		return
	}
	if reparses[uf.f]--; reparses[uf.f] == 0 {
		uf.f.data = nil
	}
}

// once records that a single-valued top-level key (app, root) is declared,
// reporting a second declaration in another file.
func (l *loader) once(f *file, e entry) bool {
	if l.declared[e.name] {
		l.errAt(f, e.key, e.name, "include: %s is already declared", e.name)
		return false
	}
	l.declared[e.name] = true
	return true
}

// dup reports a name declared twice across files; it returns true when the
// name is new.
func (l *loader) dup(f *file, e entry, path, kind string, exists bool) bool {
	if exists && f.imported {
		switch kind {
		case "agent", "agent_plugins", "host_plugins", "provider":
			// One namespace across imports: the importer's (or an
			// earlier import's) declaration wins.
			return false
		}
		l.errAt(f, e.key, path, "imports: %s %q is already declared by the importing story", kind, e.name)
		return false
	}
	if exists {
		l.errAt(f, e.key, path, "include: %s %q is already declared", kind, e.name)
		return false
	}
	return true
}

// loadInclude queues the files matched by include: globs, relative to the
// story directory. Each file is loaded once even if several globs match it.
func (l *loader) loadInclude(f *file, e entry) {
	var globs, paths []string
	var nodes []*yaml.Node
	if d := deref(e.val); d != nil && d.Kind == yaml.ScalarNode && !isNull(d) {
		globs, paths, nodes = []string{d.Value}, []string{"include"}, []*yaml.Node{d}
	} else {
		items, ok := l.list(f, e.val, "include")
		if !ok {
			return
		}
		for i, it := range items {
			p := indexPath("include", i)
			s, ok := l.str(f, it, p)
			if !ok {
				continue
			}
			globs, paths, nodes = append(globs, s), append(paths, p), append(nodes, it)
		}
	}
	for i, g := range globs {
		path := paths[i]
		if strings.TrimSpace(g) == "" {
			l.errAt(f, nodes[i], path, "empty include pattern")
			continue
		}
		pattern := filepath.FromSlash(g)
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(l.dir, pattern)
		}
		// The directory the pattern's literal part names must be inside
		// the workspace before anything is listed; then each match (a
		// symlink can lead anywhere).
		if _, err := l.ws.Resolve(l.dir, literalPrefix(pattern)); err != nil {
			l.errAt(f, nodes[i], path, "%v", renamed(err, g))
			continue
		}
		matches, err := l.ws.Glob(pattern)
		if err != nil {
			l.errAt(f, nodes[i], path, "bad include pattern %q: %v", g, err)
			continue
		}
		var files, outside []string
		var firstOut error
		for _, m := range matches {
			st, err := l.ws.Stat(m)
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			if _, err := l.ws.Resolve(l.dir, m); err != nil {
				if firstOut == nil {
					firstOut = renamed(err, l.relPath(m))
				}
				outside = append(outside, m)
				continue
			}
			files = append(files, m)
		}
		if firstOut != nil {
			more := ""
			if n := len(outside) - 1; n > 0 {
				more = fmt.Sprintf(" (and %d more)", n)
			}
			if g == l.relPath(outside[0]) || literalPrefix(pattern) == pattern {
				l.errAt(f, nodes[i], path, "%v", renamed(firstOut, g))
			} else {
				l.errAt(f, nodes[i], path, "include %q: %v%s", g, firstOut, more)
			}
			continue
		}
		if len(files) == 0 {
			l.errAt(f, nodes[i], path, "include %q matches no file", g)
			continue
		}
		for _, m := range files {
			if !l.loaded[m] {
				nf := l.newFile(m)
				l.queue = append(l.queue, nf)
			}
		}
	}
}

// literalPrefix is the part of a glob pattern before its first
// metacharacter, cut back to a whole path element: the directory the
// pattern lists (the pattern itself when it has no metacharacter).
func literalPrefix(pattern string) string {
	i := strings.IndexAny(pattern, `*?[`)
	if runtime.GOOS != "windows" {
		if j := strings.IndexByte(pattern, '\\'); j >= 0 && (i < 0 || j < i) {
			i = j
		}
	}
	if i < 0 {
		return pattern
	}
	return filepath.Dir(pattern[:i+1])
}

// renamed returns err with the path it names replaced by name (the form
// the story wrote), when err is a workspace.OutsideError.
func renamed(err error, name string) error {
	var oe *workspace.OutsideError
	if errors.As(err, &oe) {
		c := *oe
		c.Name = name
		return &c
	}
	return err
}
