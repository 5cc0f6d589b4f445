// Package catalog is the one table of the invoke handlers kitsoki provides
// (name, with: fields, result fields) and of the handlers it knows of but
// does not build because they need a product kitsoki does not have. The
// `kitsoki hosts` listing prints it, and the story loader checks invokes
// against it: the with: keys of a built-in handler, and the refusal of a
// handler that is not built. It imports nothing of kitsoki's, so the loader
// and the handlers can both use it.
package catalog

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Field is one with: key or one result key.
type Field struct {
	Name     string
	Type     string // string, int, bool, list, map, duration, any
	Required bool
	Doc      string
}

// Spec is one handler kitsoki provides.
type Spec struct {
	Name    string
	Summary string
	Fields  []Field // the with: keys
	Results []Field // what bind: reads
	// CheckFields makes the loader refuse a literal with: key that is not
	// in Fields, and a missing Required one. Agent verbs take template
	// variables as extra keys, so they are not checked here.
	CheckFields bool
	// ResultsComplete says Results lists every field the handler's data
	// can hold, so a bind: reading another is an error, not a warning.
	ResultsComplete bool
	// Shell, when set, names the with: field that is a bash command line:
	// values spliced into it are shell-quoted when the call is made, and
	// validate warns when it is built from slots.
	Shell *Shell
}

// Shell describes a handler's shell command line: the Command field is
// run by bash unless the Argv field is given (then no shell is involved).
type Shell struct{ Command, Argv string }

// Unbuilt is a handler family kitsoki knows from other stories but does
// not provide: it needs a product kitsoki does not have.
type Unbuilt struct {
	Name  string // the handler, or the prefix of a family (host.ide covers host.ide.open_file)
	Needs string // the product, as the refusal names it
}

// Field returns the with: field named name.
func (s Spec) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

var agentFields = []Field{
	{Name: "prompt", Type: "string", Doc: "the prompt template (or prompt_path, a prompt file)"},
	{Name: "prompt_path", Type: "string", Doc: "a prompt file, relative to the story directory"},
	{Name: "schema", Type: "string", Doc: "JSON Schema file the submission must satisfy"},
	{Name: "agent", Type: "string", Doc: "persona from agents:"},
	{Name: "provider", Type: "string", Doc: "provider from providers:"},
	{Name: "timeout", Type: "duration", Doc: "hard deadline of the call (default 10m)"},
}

var agentResults = []Field{
	{Name: "ok", Type: "bool"},
	{Name: "exit_code", Type: "int", Doc: "0 on success"},
	{Name: "submitted", Type: "map", Doc: "the agent's submission"},
	{Name: "submission", Type: "map", Doc: "the same, as agent_plugins agents answer it"},
	{Name: "meta", Type: "map", Doc: "the agent's meta, when it sent one"},
	{Name: "stdout", Type: "string", Doc: "the built-in path's text answer (every verb but decide)"},
	{Name: "rationale", Type: "string", Doc: "the built-in path's reasoning (decide)"},
	{Name: "claude_session_id", Type: "string", Doc: "the built-in path's claude session (decide)"},
}

// Builtins returns the handlers kitsoki provides, sorted by name. Each call
// returns a fresh copy of the table (its Field slices are shared: read them,
// don't write them).
func Builtins() []Spec {
	return slices.Clone(builtins())
}

// builtins is the table, built once: the loader looks handlers up for every
// invoke of every story it loads, and rebuilding the table each time was a
// tenth of a large story's load allocations.
var builtins = sync.OnceValue(buildBuiltins)

// byName indexes the table for Lookup.
var byName = sync.OnceValue(func() map[string]int {
	m := make(map[string]int, len(builtins()))
	for i, s := range builtins() {
		m[s.Name] = i
	}
	return m
})

// completeResults are the handlers whose Results list every field their
// data can hold (each package's tests check what it returns against the
// table): a bind: reading another field of theirs is a load error. The
// others (agent verbs, whose answers are the agent's; scripts; plugins'
// tickets) may return more, so such a bind is a warning.
var completeResults = []string{
	"host.run",
	"host.artifacts_dir", "host.artifacts_dir.post", "host.artifacts_dir.list",
	"host.append_to_file", "host.append_to_file.post",
	"host.jobs.list", "host.jobs.status", "host.jobs.cancel", "host.jobs.answer_clarification",
	"host.inbox.add", "host.inbox.list", "host.inbox.mark_read",
}

func buildBuiltins() []Spec {
	var specs []Spec
	specs = append(specs, agentSpecs()...)
	specs = append(specs, artifactSpecs()...)
	specs = append(specs, runAndSessionSpecs()...)
	specs = append(specs, worktreeSpecs()...)
	specs = append(specs, ticketSpecs()...)
	specs = append(specs, vcsSpecs()...)
	specs = append(specs, chatSpecs()...)
	specs = append(specs, ideSpecs()...)
	specs = append(specs, family("host.gh.ticket", "the ticket interface over GitHub Issues through the gh CLI", ghTicketOps())...)
	specs = append(specs, workspaceManagerSpecs()...)
	specs = append(specs, family("host.local", "the ci interface: tests and builds run in a work tree, checks read from the forge", ciOps())...)
	for i := range specs {
		specs[i].ResultsComplete = slices.Contains(completeResults, specs[i].Name)
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// agentSpecs are the host.agent verbs: one call to an agent each, sharing
// the fields and results of agentFields and agentResults.
func agentSpecs() []Spec {
	agent := func(verb, summary string) Spec {
		return Spec{Name: "host.agent." + verb, Summary: summary, Fields: agentFields, Results: agentResults}
	}
	return []Spec{
		agent("ask", "Read-only inspection call to an agent: prose and optional typed JSON."),
		agent("converse", "Free-form conversation with an agent."),
		agent("decide", "Typed verdict from an agent (schema required)."),
		agent("extract", "Typed extraction from an agent."),
		{Name: "host.agent.search", Summary: "Find the passages of workspace files closest to a query (with.corpus, ranked by routing.embedding), or rank given texts (with.documents, the invoke's agent: names a builtin.local_llm).",
			Fields: []Field{
				{Name: "query", Type: "string", Required: true, Doc: "the text to rank against"},
				{Name: "corpus", Type: "list", Doc: "globs of workspace files to search (\"docs/**/*.md\"); ranked by the story's routing.embedding model"},
				{Name: "chunk", Type: "object", Doc: "how files are cut: {max: characters (default 1200), mode: heading (default) or file}"},
				{Name: "min_score", Type: "float", Doc: "the lowest cosine similarity a hit may have"},
				{Name: "documents", Type: "list", Doc: "the texts to rank (instead of corpus)"},
				{Name: "top_k", Type: "int", Doc: "how many hits or results to keep (corpus: default 10)"},
			},
			Results: []Field{
				{Name: "ok", Type: "bool"},
				{Name: "exit_code", Type: "int", Doc: "0 on success"},
				{Name: "hits", Type: "list", Doc: "corpus: one {path, chunk_id, heading, line, text, score} per passage kept, best first"},
				{Name: "data", Type: "object", Doc: "corpus: {hits, top}"},
				{Name: "count", Type: "int", Doc: "corpus: the number of hits"},
				{Name: "files", Type: "int", Doc: "corpus: the files the globs matched"},
				{Name: "chunks", Type: "int", Doc: "corpus: the passages ranked"},
				{Name: "results", Type: "list", Doc: "documents: one {index, doc, score} per document kept, best first"},
				{Name: "top", Type: "any", Doc: "the best hit (corpus) or document (documents); null when none"},
			}},
		agent("task", "Agentic task with the full tool surface."),
	}
}

// artifactSpecs are the handlers that write and list files in the
// session's artifact directory, and their transport post forms.
func artifactSpecs() []Spec {
	artifactFields := []Field{
		{Name: "thread", Type: "string", Required: true, Doc: "file name under the artifact directory; a bare name gets .md (media emit: the source's extension)"},
		{Name: "body", Type: "any", Doc: "the text (required without src_path); maps and lists are written as indented JSON"},
		{Name: "title", Type: "string", Doc: "written as a ### header above the body"},
		{Name: "phase_id", Type: "string", Doc: "written as a _phase: <id>_ line below the body"},
		{Name: "author", Type: "string", Doc: "informational; not written"},
		{Name: "mode", Type: "string", Doc: "append (default) or replace"},
		{Name: "artifacts_root", Type: "string", Doc: "write under this directory inside the workspace instead of the session's"},
		{Name: "workdir", Type: "string", Doc: "the same as artifacts_root (Kitsoki stories write it); give one of the two"},
		{Name: "src_path", Type: "string", Doc: "media emit: copy this file inside the workspace (with its sidecars) instead of writing body"},
		{Name: "kind", Type: "string", Doc: "media emit: video, image, pdf, html or slideshow"},
		{Name: "mime", Type: "string", Doc: "media emit: the MIME type (default from the file extension)"},
		{Name: "label", Type: "string", Doc: "media emit: a display name, returned in the handle"},
	}
	artifactResults := []Field{
		{Name: "ok", Type: "bool"},
		{Name: "path", Type: "string", Doc: "absolute path of the file written"},
		{Name: "message_id", Type: "string", Doc: "<file name without extension>#<chunk number> (body writes)"},
		{Name: "handle", Type: "map", Doc: "media emit: {id, kind, mime, label, path}; id is <file name without extension>#<n>"},
		{Name: "mime", Type: "string", Doc: "media emit"},
		{Name: "kind", Type: "string", Doc: "media emit"},
	}
	listSpec := func(name string) Spec {
		return Spec{Name: name, Summary: "List the files in the session's artifact directory.",
			CheckFields: true,
			Results: []Field{
				{Name: "ok", Type: "bool"},
				{Name: "dir", Type: "string", Doc: "absolute path of the session's artifact directory"},
				{Name: "artifacts", Type: "list", Doc: "one {name, path, size} per file, sorted by name"},
			}}
	}
	appendFields := []Field{
		{Name: "file", Type: "string", Doc: "the file every chunk goes to (default transcript.md)"},
		{Name: "thread", Type: "string", Doc: "written as a <!-- thread: … --> line above the chunk"},
		{Name: "body", Type: "any", Required: true, Doc: "the text; maps and lists are written as indented JSON"},
		{Name: "title", Type: "string", Doc: "written as a ### header above the body"},
		{Name: "phase_id", Type: "string", Doc: "written as a _phase: <id>_ line below the body"},
		{Name: "author", Type: "string", Doc: "informational; not written"},
	}
	return []Spec{
		{Name: "host.append_to_file", Summary: "Append a chunk to one file in the session's artifact directory.",
			CheckFields: true, Fields: appendFields, Results: artifactResults},
		{Name: "host.append_to_file.post", Summary: "host.append_to_file as a transport's post op.",
			CheckFields: true, Fields: appendFields, Results: artifactResults},
		{Name: "host.artifacts_dir", Summary: "Write one file per thread in the session's artifact directory.",
			CheckFields: true, Fields: artifactFields, Results: artifactResults},
		listSpec("host.artifacts_dir.list"),
		{Name: "host.artifacts_dir.post", Summary: "host.artifacts_dir as a transport's post op.",
			CheckFields: true, Fields: artifactFields, Results: artifactResults},
	}
}

// runAndSessionSpecs are the handlers of one session: host.run, the diff
// view, background jobs, the inbox, Starlark scripts and the terminal
// transport.
func runAndSessionSpecs() []Spec {
	return []Spec{
		{Name: "host.run", Summary: "Run a program with arguments (argv mode, no shell) or a bash command, inside the workspace.",
			CheckFields: true, Shell: &Shell{Command: "cmd", Argv: "args"},
			Fields: []Field{
				{Name: "cmd", Type: "string", Required: true, Doc: "the program (argv mode) or the bash command (shell mode)"},
				{Name: "args", Type: "list", Doc: "present: argv mode, cmd is executed with these arguments and no shell; use it for templated values"},
				{Name: "cwd", Type: "string", Doc: "working directory inside the workspace, relative to it (default the workspace directory)"},
				{Name: "env", Type: "map", Doc: "variables added to kitsoki's environment; ${VAR} values are secrets, masked in traces"},
				{Name: "fail_on_error", Type: "bool", Doc: "a non-zero exit is an error (on_error fires); default false"},
				{Name: "timeout", Type: "duration", Doc: "e.g. 30s or a number of seconds; default 10m; the process group is stopped when it passes"},
				{Name: "max_output", Type: "int", Doc: "bytes of output kept (default 1048576); the rest is read and dropped"},
			},
			Results: []Field{
				{Name: "stdout", Type: "string", Doc: "stdout and stderr, interleaved as written"},
				{Name: "exit_code", Type: "int", Doc: "-1 when the command was ended by a signal"},
				{Name: "ok", Type: "bool", Doc: "exit_code == 0"},
				{Name: "truncated", Type: "bool", Doc: "output went past max_output and was cut"},
				{Name: "stdout_json", Type: "any", Doc: "the last non-empty line, when it parses as one JSON document"},
				{Name: "stdout_json_parse_error", Type: "string", Doc: "set instead when that line starts like JSON but does not parse"},
			}},
		{Name: "host.diff.open", Summary: "Show a change against a base as a text diff in the run's output; the operator, when there is one, is asked to accept or reject it.",
			CheckFields: true,
			Fields: []Field{
				{Name: "paths", Type: "list", Doc: "changes on disk: files or directories inside the workspace (a string is one path); default the whole tree"},
				{Name: "base", Type: "string", Doc: "changes on disk: what the working tree is compared with (default HEAD)"},
				{Name: "path", Type: "string", Doc: "proposed content: the file inside the workspace new_text would replace"},
				{Name: "new_text", Type: "string", Doc: "proposed content: compared with path's current content (a missing file is empty)"},
				{Name: "title", Type: "string", Doc: "written in the header line"},
			},
			Results: []Field{
				{Name: "ok", Type: "bool"},
				{Name: "surface", Type: "string", Doc: "text when printed on the run's output, none when the run has none (flows)"},
				{Name: "reviewed", Type: "bool", Doc: "the diff was shown"},
				{Name: "verdict", Type: "string", Doc: "accept or reject as the operator answered at the prompt; empty when nobody could (no operator, nothing printed)"},
				{Name: "diff", Type: "string", Doc: "the unified diff (first 1 MiB)"},
				{Name: "truncated", Type: "bool"},
			}},
		{Name: "host.jobs.list", Summary: "List the session's background jobs, in start order.", CheckFields: true,
			Fields:  []Field{{Name: "status", Type: "string", Doc: "only the jobs in this status: running, awaiting_input, done, failed or cancelled"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "jobs", Type: "list", Doc: "one {job_id, handler, state, status, call?, question?, error?} per job"}, {Name: "count", Type: "int"}}},
		{Name: "host.jobs.status", Summary: "Describe one background job.", CheckFields: true,
			Fields: []Field{{Name: "job_id", Type: "string", Required: true, Doc: "the job's id (job-1, …; bind job_id when starting it)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "job_id", Type: "string"}, {Name: "handler", Type: "string"}, {Name: "state", Type: "string", Doc: "the state that started it"},
				{Name: "status", Type: "string", Doc: "running, awaiting_input, done, failed or cancelled"}, {Name: "question", Type: "map", Doc: "{prompt, fields?} while awaiting_input"}, {Name: "error", Type: "string", Doc: "a failed job's error"}}},
		{Name: "host.jobs.cancel", Summary: "Cancel a running background job (its completion is delivered as cancelled).", CheckFields: true,
			Fields:  []Field{{Name: "job_id", Type: "string", Required: true, Doc: "the job's id (job-1, …; bind job_id when starting it)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "job_id", Type: "string"}, {Name: "status", Type: "string", Doc: "the status when the cancel was asked"}}},
		{Name: "host.jobs.answer_clarification", Summary: "Answer the question a background job is waiting on; it resumes on its next poll.", CheckFields: true,
			Fields:  []Field{{Name: "job_id", Type: "string", Required: true, Doc: "the job's id (job-1, …; bind job_id when starting it)"}, {Name: "answer", Type: "any", Required: true, Doc: "what the question asked for"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "job_id", Type: "string"}}},
		{Name: "host.inbox.add", Summary: "Post a notification to the session's inbox.", CheckFields: true,
			Fields: []Field{
				{Name: "title", Type: "string", Doc: "what it says (title or body is required)"},
				{Name: "body", Type: "any", Doc: "the detail; maps and lists are kept as indented JSON"},
				{Name: "severity", Type: "string", Doc: "info (default), success, warn, error or action_required"},
				{Name: "kind", Type: "string", Doc: "what it is about (free text: checkpoint, incident, …)"},
				{Name: "thread", Type: "string"},
				{Name: "state", Type: "string", Doc: "the state it points to"},
				{Name: "job_id", Type: "string", Doc: "the background job it is about"},
			},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string", Doc: "n-1, n-2, … in posting order"}}},
		{Name: "host.inbox.list", Summary: "List the session's inbox notifications, in posting order.", CheckFields: true,
			Fields: []Field{{Name: "unread_only", Type: "bool"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "notifications", Type: "list", Doc: "one {id, severity, title, read, kind?, body?, thread?, state?, job_id?} each"},
				{Name: "unread", Type: "int"}, {Name: "needs_attention", Type: "int", Doc: "unread action_required ones"}}},
		{Name: "host.inbox.mark_read", Summary: "Mark an inbox notification read.", CheckFields: true,
			Fields:  []Field{{Name: "id", Type: "string", Required: true, Doc: "the notification's id (host.inbox.list's id)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}}},
		{Name: "host.starlark.run", Summary: "Run a Starlark script's main(ctx) (sandboxed: no clock, no randomness, no writes; HTTP through a recorder) and bind the dict it returns.",
			Fields: []Field{
				{Name: "script", Type: "string", Required: true, Doc: "the .star file, relative to the story; its <script>.yaml sidecar types the inputs and outputs"},
				{Name: "inputs", Type: "map", Doc: "the script's ctx.inputs, checked against the sidecar"},
			},
			Results: []Field{
				{Name: "<output>", Type: "any", Doc: "each key of the dict main returns (the sidecar's outputs)"},
				{Name: "__http_exchanges", Type: "list", Doc: "one {method, url, status} per HTTP call the script made"},
			}},
		{Name: "host.transport.post", Summary: "Post a message to the terminal (kitsoki run's stdout, secrets masked).",
			CheckFields: true,
			Fields: []Field{
				{Name: "body", Type: "any", Required: true, Doc: "the message; maps and lists are written as indented JSON"},
				{Name: "transport", Type: "string", Doc: "terminal or tui (the default); any other is refused"},
				{Name: "thread", Type: "string", Doc: "written in the header; message ids count per thread"},
				{Name: "title", Type: "string", Doc: "written in the header"},
				{Name: "phase_id", Type: "string", Doc: "a phase posted on the same thread before is not posted again"},
				{Name: "bot_marker", Type: "string", Doc: "starts the header (default [kitsoki]; empty for none)"},
			},
			Results: []Field{
				{Name: "ok", Type: "bool"},
				{Name: "message_id", Type: "string", Doc: "<thread or terminal>#<n>"},
				{Name: "duplicate", Type: "bool", Doc: "the phase_id was posted already; nothing was printed"},
			}},
	}
}

// worktreeSpecs are the git worktree operations and host.git_worktree, the
// one handler that takes any of them with with.op: its fields and results
// are the union of the operations', each documented with the op it is for.
func worktreeSpecs() []Spec {
	wtOps := []Spec{
		{Name: "host.git_worktree.list", Summary: "List the repository's worktrees.",
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "workspaces", Type: "list", Doc: "one {id, path, branch, dirty, session} per worktree; session is the one that made it (kitsoki's, under .worktrees)"}}},
		{Name: "host.git_worktree.get", Summary: "Describe a worktree of this session.",
			Fields:  []Field{{Name: "id", Type: "string", Required: true, Doc: "the worktree's id, as create returned it"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "path", Type: "string"}, {Name: "branch", Type: "string"}, {Name: "dirty", Type: "bool"}}},
		{Name: "host.git_worktree.create", Summary: "Create (or return) a worktree of this session on a branch.",
			Fields: []Field{
				{Name: "name", Type: "string", Required: true, Doc: "the branch: created from base, or checked out when it exists"},
				{Name: "id", Type: "string", Doc: "the directory name (default name with / as -)"},
				{Name: "base", Type: "string", Doc: "branch, tag or commit a new branch starts at (default HEAD)"},
				{Name: "session_id", Type: "string", Doc: "must be this run's session when given; another session's worktree is refused"},
			},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "path", Type: "string", Doc: "absolute: <workspace>/.worktrees/<id>"}, {Name: "branch", Type: "string"}, {Name: "created", Type: "bool", Doc: "false when the worktree already existed"}}},
		{Name: "host.git_worktree.sync", Summary: "Fast-forward a worktree's branch to its upstream.",
			Fields:  []Field{{Name: "id", Type: "string", Required: true, Doc: "the worktree's id"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "path", Type: "string"}, {Name: "log", Type: "string", Doc: "git pull's output, or why there was nothing to do"}}},
		{Name: "host.git_worktree.cleanup_scan", Summary: "Propose kitsoki's worktrees for removal (merged, clean, not protected).",
			Fields: []Field{
				{Name: "base", Type: "string", Doc: "the branch merged work lands on (default the workspace's branch)"},
				{Name: "exclude", Type: "string", Doc: "never recommend a worktree whose branch or path contains this text"},
				{Name: "protected", Type: "string", Doc: "comma-separated branches never recommended"},
			},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "base", Type: "string"}, {Name: "exclude", Type: "string"},
				{Name: "candidates", Type: "list", Doc: "one {kind, id, path, branch, base, merged, dirty, recommended, reason, actions} per worktree"},
				{Name: "recommended_count", Type: "int"}}},
		{Name: "host.git_worktree.cleanup_apply", Summary: "Remove each recommended candidate's worktree and branch.",
			Fields: []Field{{Name: "candidates", Type: "list", Required: true, Doc: "cleanup_scan's candidates"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "deleted", Type: "list", Doc: "{branch, path} removed"},
				{Name: "skipped", Type: "list", Doc: "{branch, path, reason} not recommended"}, {Name: "errors", Type: "list", Doc: "{branch, path, error} git refused"}}},
	}
	wtAll := Spec{Name: "host.git_worktree", Summary: "The workspace interface over git worktrees: with.op selects list, get, create, sync, cleanup_scan or cleanup_apply (each is also host.git_worktree.<op>).",
		Fields: []Field{{Name: "op", Type: "string", Required: true, Doc: "list, get, create, sync, cleanup_scan or cleanup_apply"}}}
	for _, o := range wtOps {
		op := strings.TrimPrefix(o.Name, "host.git_worktree.")
		for _, f := range o.Fields {
			if i := slices.IndexFunc(wtAll.Fields, func(g Field) bool { return g.Name == f.Name }); i >= 0 {
				wtAll.Fields[i].Doc += ", " + op
				continue
			}
			wtAll.Fields = append(wtAll.Fields, Field{Name: f.Name, Type: f.Type, Doc: op})
		}
	}
	for _, o := range wtOps {
		for _, f := range o.Results {
			if i := slices.IndexFunc(wtAll.Results, func(r Field) bool { return r.Name == f.Name }); i >= 0 {
				if f.Name != "ok" {
					wtAll.Results[i].Doc += ", " + strings.TrimPrefix(o.Name, "host.git_worktree.")
				}
				continue
			}
			doc := strings.TrimPrefix(o.Name, "host.git_worktree.")
			if f.Name == "ok" {
				doc = ""
			}
			wtAll.Results = append(wtAll.Results, Field{Name: f.Name, Type: f.Type, Doc: doc})
		}
	}
	wtAll.CheckFields = true
	for i := range wtOps {
		wtOps[i].CheckFields = true
	}
	return append([]Spec{wtAll}, wtOps...)
}

// Unbuilts returns the handler families kitsoki does not build, sorted by
// name. Each call returns a fresh table.
func Unbuilts() []Unbuilt {
	return []Unbuilt{
		{Name: "host.bitbucket", Needs: "Bitbucket"},
		{Name: "host.contact_sheet", Needs: "ffmpeg montages"},
		{Name: "host.cypilot_artifacts", Needs: "cypilot"},
		{Name: "host.jenkins", Needs: "Jenkins"},
		{Name: "host.jira", Needs: "Jira"},
		{Name: "host.jira_comment", Needs: "Jira"},
		{Name: "host.slidey", Needs: "slidey"},
		{Name: "host.video", Needs: "ffmpeg"},
	}
}

// Lookup returns the built-in handler named exactly name.
func Lookup(name string) (Spec, bool) {
	i, ok := byName()[name]
	if !ok {
		return Spec{}, false
	}
	return builtins()[i], true
}

// Refused returns the unbuilt family name belongs to: the family itself or
// a name under it (host.ide.open_file is under host.ide).
func Refused(name string) (Unbuilt, bool) {
	for _, u := range Unbuilts() {
		if name == u.Name || strings.HasPrefix(name, u.Name+".") {
			return u, true
		}
	}
	return Unbuilt{}, false
}

// ticketSpecs are host.local_files.ticket (with.op) and its operations.
func ticketSpecs() []Spec {
	const name = "host.local_files.ticket"
	common := []Field{
		{Name: "root", Type: "string", Doc: "the directory issues/ lies under, inside the workspace (default the workspace)"},
		{Name: "repo", Type: "string", Doc: "a hosted repository (GitHub providers of iface.ticket); must be empty here"},
	}
	summary := "one {id, type, title, status, severity, assignee, url, repro_command, path} per ticket: P0 first, then the newest id"
	skipped := Field{Name: "skipped", Type: "list", Doc: "{path, error} of the ticket files that do not parse"}
	ops := []Spec{
		{Name: name + ".search", Summary: "Find tickets whose title or body contains a text.",
			Fields:  []Field{{Name: "query", Type: "string", Doc: "case-insensitive text (empty: every ticket)"}, {Name: "limit", Type: "int", Doc: "at most this many (0: no limit)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "tickets", Type: "list", Doc: summary}, skipped}},
		{Name: name + ".get", Summary: "Read one ticket with its comments.",
			Fields: []Field{{Name: "id", Type: "string", Required: true, Doc: "the file name under issues/<type>/ without .md"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "type", Type: "string", Doc: "bug, feature or epic (its directory)"},
				{Name: "title", Type: "string"}, {Name: "body", Type: "string"}, {Name: "status", Type: "string"}, {Name: "severity", Type: "string"},
				{Name: "assignee", Type: "string"}, {Name: "url", Type: "string"}, {Name: "repro_command", Type: "string"}, {Name: "path", Type: "string", Doc: "relative to the workspace"},
				{Name: "comments", Type: "list", Doc: "one {id, author, created_at, body} per comment"}}},
		{Name: name + ".comment", Summary: "Append a comment to a ticket.",
			Fields: []Field{{Name: "id", Type: "string", Doc: "the ticket (required unless thread names its file)"}, {Name: "body", Type: "string", Required: true, Doc: "the comment's Markdown text"},
				{Name: "thread", Type: "string", Doc: "a ticket's .md file (relative to root) to comment on instead of id; other values are not a file and leave id to decide"},
				{Name: "author", Type: "string", Doc: "written in the comment's heading (default kitsoki)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "comment_id", Type: "string", Doc: "<id>#<n>"}}},
		{Name: name + ".transition", Summary: "Set a ticket's status in its front matter.",
			Fields:  []Field{{Name: "id", Type: "string", Required: true, Doc: "the file name under issues/<type>/ without .md"}, {Name: "to", Type: "string", Required: true, Doc: "the new status, e.g. resolved"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "status", Type: "string"}}},
		{Name: name + ".list_mine", Summary: "List the tickets of an assignee.",
			Fields:  []Field{{Name: "filter", Type: "string", Doc: "text the assignee contains (a leading assignee= is dropped; empty: every ticket)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "tickets", Type: "list", Doc: summary}, skipped}},
	}
	all := Spec{Name: name, Summary: "The ticket interface over Markdown files under issues/{bugs,features,epics}/: with.op selects search, get, comment, transition or list_mine (each is also " + name + ".<op>).",
		Fields: []Field{{Name: "op", Type: "string", Required: true, Doc: "search, get, comment, transition or list_mine"}}, CheckFields: true}
	for i := range ops {
		ops[i].Fields = append(ops[i].Fields, common...)
		ops[i].CheckFields = true
		op := strings.TrimPrefix(ops[i].Name, name+".")
		for _, f := range ops[i].Fields {
			if j := slices.IndexFunc(all.Fields, func(g Field) bool { return g.Name == f.Name }); j >= 0 {
				if f.Name != "root" && f.Name != "repo" {
					all.Fields[j].Doc += ", " + op
				}
				continue
			}
			doc := op
			if f.Name == "root" || f.Name == "repo" {
				doc = f.Doc
			}
			all.Fields = append(all.Fields, Field{Name: f.Name, Type: f.Type, Doc: doc})
		}
		for _, f := range ops[i].Results {
			if !slices.ContainsFunc(all.Results, func(r Field) bool { return r.Name == f.Name }) {
				all.Results = append(all.Results, f)
			}
		}
	}
	return append(ops, all)
}

// CheckArgs refuses a with: key the built-in handler name does not take (a
// templated with: the loader could not check); "call" and "op" are always
// allowed.
func CheckArgs(name string, args map[string]any) error {
	spec, _ := Lookup(name)
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if k == "call" || k == "op" {
			continue
		}
		if _, ok := spec.Field(k); !ok {
			names := make([]string, len(spec.Fields))
			for i, f := range spec.Fields {
				names[i] = f.Name
			}
			return fmt.Errorf("with.%s is not a field of %s (fields: %s)", k, name, strings.Join(names, ", "))
		}
	}
	return nil
}
