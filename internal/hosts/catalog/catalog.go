// Package catalog is the one table of the invoke handlers kitsoki provides
// (name, with: fields, result fields) and of the handlers it knows of but
// does not build because they need a product kitsoki does not have. The
// `kitsoki hosts` listing prints it, and the story loader checks invokes
// against it: the with: keys of a built-in handler, and the refusal of a
// handler that is not built. It imports nothing of kitsoki's, so the loader
// and the handlers can both use it.
package catalog

import "strings"

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
}

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
	{Name: "submitted", Type: "map", Doc: "the agent's submission (also as submission)"},
	{Name: "meta", Type: "map", Doc: "the agent's meta, when it sent one (agent_plugins agents)"},
}

// Builtins returns the handlers kitsoki provides, sorted by name. Each call
// returns a fresh table.
func Builtins() []Spec {
	agent := func(verb, summary string) Spec {
		return Spec{Name: "host.agent." + verb, Summary: summary, Fields: agentFields, Results: agentResults}
	}
	artifactFields := []Field{
		{Name: "thread", Type: "string", Required: true, Doc: "file name under the artifact directory; a bare name gets .md (media emit: the source's extension)"},
		{Name: "body", Type: "any", Doc: "the text (required without src_path); maps and lists are written as indented JSON"},
		{Name: "title", Type: "string", Doc: "written as a ### header above the body"},
		{Name: "phase_id", Type: "string", Doc: "written as a _phase: <id>_ line below the body"},
		{Name: "author", Type: "string", Doc: "informational; not written"},
		{Name: "mode", Type: "string", Doc: "append (default) or replace"},
		{Name: "artifacts_root", Type: "string", Doc: "write under this directory inside the workspace instead of the session's"},
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
		agent("ask", "Read-only inspection call to an agent: prose and optional typed JSON."),
		agent("converse", "Free-form conversation with an agent."),
		agent("decide", "Typed verdict from an agent (schema required)."),
		agent("extract", "Typed extraction from an agent."),
		{Name: "host.agent.search", Summary: "Rank documents with a local embedding model (the invoke's agent: names a builtin.local_llm).",
			Fields: []Field{
				{Name: "query", Type: "string", Required: true},
				{Name: "documents", Type: "list", Required: true},
				{Name: "top_k", Type: "int", Doc: "how many results to keep"},
			},
			Results: []Field{
				{Name: "ok", Type: "bool"},
				{Name: "exit_code", Type: "int", Doc: "0 on success"},
				{Name: "results", Type: "list", Doc: "one {index, doc, score} per document kept, best first"},
				{Name: "top", Type: "string", Doc: "the best document"},
			}},
		agent("task", "Agentic task with the full tool surface."),
		{Name: "host.append_to_file", Summary: "Append a chunk to one file in the session's artifact directory.",
			CheckFields: true, Fields: appendFields, Results: artifactResults},
		{Name: "host.append_to_file.post", Summary: "host.append_to_file as a transport's post op.",
			CheckFields: true, Fields: appendFields, Results: artifactResults},
		{Name: "host.artifacts_dir", Summary: "Write one file per thread in the session's artifact directory.",
			CheckFields: true, Fields: artifactFields, Results: artifactResults},
		listSpec("host.artifacts_dir.list"),
		{Name: "host.artifacts_dir.post", Summary: "host.artifacts_dir as a transport's post op.",
			CheckFields: true, Fields: artifactFields, Results: artifactResults},
		{Name: "host.run", Summary: "Run a program with arguments (argv mode, no shell) or a bash command, inside the workspace.",
			CheckFields: true,
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
	}
}

// Unbuilts returns the handler families kitsoki does not build, sorted by
// name. Each call returns a fresh table.
func Unbuilts() []Unbuilt {
	return []Unbuilt{
		{Name: "host.bitbucket", Needs: "Bitbucket"},
		{Name: "host.contact_sheet", Needs: "ffmpeg montages"},
		{Name: "host.ide", Needs: "the IDE link"},
		{Name: "host.jenkins", Needs: "Jenkins"},
		{Name: "host.jira", Needs: "Jira"},
		{Name: "host.jira_comment", Needs: "Jira"},
		{Name: "host.slidey", Needs: "slidey"},
		{Name: "host.video", Needs: "ffmpeg"},
	}
}

// Lookup returns the built-in handler named exactly name.
func Lookup(name string) (Spec, bool) {
	for _, s := range Builtins() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
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
