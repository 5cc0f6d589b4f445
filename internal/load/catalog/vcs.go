package catalog

import (
	"slices"
	"strings"
)

// VCSNames are the handlers of the vcs interface: host.git (the forge its
// repository's kitsoki.forge setting picks) and host.github (always
// GitHub).
var vcsNames = []string{"host.git", "host.github"}

// VCSNames returns the vcs providers' names.
func VCSNames() []string { return slices.Clone(vcsNames) }

var workdirField = Field{Name: "workdir", Type: "string", Doc: "the git work tree to act in, inside the workspace (default the workspace directory)"}

// vcsOps are the operations of the vcs interface, in the order the
// catalog lists them.
func vcsOps() []Spec {
	prID := Field{Name: "pr_id", Type: "string", Required: true, Doc: "the pull request (open_pr's pr_id)"}
	prResults := []Field{
		{Name: "ok", Type: "bool"},
		{Name: "pr_id", Type: "string"}, {Name: "url", Type: "string"},
		{Name: "state", Type: "string", Doc: "the roll-up of the head commit's checks: success, failure or pending (no checks: success)"},
		{Name: "checks", Type: "string", Doc: "the names of the failing checks, comma-separated"},
		{Name: "check_runs", Type: "list", Doc: "one {name, state, sha, summary, log, url} per check of the head commit"},
		{Name: "comments", Type: "string", Doc: "the comments and reviews as text, one \"author (verdict): body\" line each"},
		{Name: "comment_list", Type: "list", Doc: "one {id, author, body, verdict, created_at} per comment or review"},
		{Name: "comment_count", Type: "int"},
		{Name: "pr_state", Type: "string", Doc: "open, merged or closed"},
		{Name: "draft", Type: "bool", Doc: "opened as a draft (open_pr's draft)"},
		{Name: "review_decision", Type: "string", Doc: "approved, changes_requested or empty"},
		{Name: "title", Type: "string"}, {Name: "body", Type: "string"}, {Name: "base", Type: "string"}, {Name: "head", Type: "string"},
		{Name: "head_sha", Type: "string"}, {Name: "merged_sha", Type: "string"},
	}
	return []Spec{
		{Name: "branch", Summary: "Create a branch from base and check it out in the work tree (or check out the one there is).",
			Fields: []Field{workdirField,
				{Name: "name", Type: "string", Required: true, Doc: "the branch"},
				{Name: "base", Type: "string", Doc: "branch, tag or commit a new branch starts at (default HEAD)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "branch", Type: "string"}, {Name: "sha", Type: "string"}, {Name: "created", Type: "bool", Doc: "false when the branch existed"}}},
		{Name: "diff", Summary: "The change of the work tree's branch against its base (committed, uncommitted and new files), or a pull request's change.",
			Fields: []Field{workdirField,
				{Name: "pr_id", Type: "string", Doc: "the diff of this pull request instead"},
				{Name: "base", Type: "string", Doc: "what the branch is compared with (default its open pull request's base, else main or master)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "diff", Type: "string", Doc: "the unified diff (first 1 MiB)"},
				{Name: "files", Type: "list", Doc: "the changed and new files, relative to the repository"}, {Name: "base", Type: "string"}, {Name: "truncated", Type: "bool"}}},
		{Name: "commit", Summary: "Commit the work tree's changes: the named files, every change (stage_all), or the tracked ones.",
			Fields: []Field{workdirField,
				{Name: "message", Type: "string", Required: true, Doc: "the commit message"},
				{Name: "files", Type: "list", Doc: "commit only these paths (new, changed or deleted), relative to the work tree"},
				{Name: "stage_all", Type: "bool", Doc: "commit every change, untracked files included (git add -A; kitsoki's own directories left out)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "sha", Type: "string", Doc: "the new commit, or HEAD when there was nothing to commit"},
				{Name: "committed", Type: "bool", Doc: "false when there was nothing to commit (not an error)"}, {Name: "branch", Type: "string"},
				{Name: "files", Type: "list", Doc: "the files the commit changed"}}},
		{Name: "push", Summary: "Push the work tree's branch to a remote and track it there.",
			Fields: []Field{workdirField,
				{Name: "remote", Type: "string", Doc: "the remote (default the branch's upstream, else origin)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "remote", Type: "string"}, {Name: "url", Type: "string", Doc: "the remote's URL"},
				{Name: "branch", Type: "string"}, {Name: "sha", Type: "string"}}},
		{Name: "open_pr", Summary: "Open a pull request of the work tree's branch into base (an open one for the branch is returned).",
			Fields: []Field{workdirField,
				{Name: "title", Type: "string", Doc: "default the branch's last commit subject"},
				{Name: "body", Type: "string"},
				{Name: "base", Type: "string", Doc: "the branch it merges into (default main or master)"},
				{Name: "draft", Type: "bool", Doc: "open it as a draft (GitHub: gh pr create --draft; local forge: recorded, returned as draft)"}},
			Results: append([]Field{{Name: "created", Type: "bool", Doc: "false when the branch already had an open pull request"}}, prResults...)},
		{Name: "pr_status", Summary: "Read a pull request: its checks' state, comments and reviews (pr_id \"*\": the open pull requests).",
			Fields:  []Field{{Name: "pr_id", Type: "string", Required: true, Doc: "the pull request, or \"*\" for every open one (prs, and comments as a list of them)"}},
			Results: append(prResults, Field{Name: "prs", Type: "list", Doc: "pr_id \"*\": one pull request each"})},
		{Name: "pr_comment", Summary: "Comment on a pull request, or review it (approve / request changes).",
			Fields: []Field{prID,
				{Name: "body", Type: "string", Doc: "the comment (required unless approve)"},
				{Name: "approve", Type: "bool", Doc: "an approving review"},
				{Name: "request_changes", Type: "bool", Doc: "a review asking for changes"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "comment_id", Type: "string"}, {Name: "verdict", Type: "string", Doc: "comment, approve or request_changes"},
				{Name: "review_decision", Type: "string", Doc: "approved, changes_requested or empty"}, {Name: "pr_id", Type: "string"}}},
		{Name: "merge", Summary: "Merge a pull request onto its base (local forge: merged in the base's checkout, pushed when the base tracks a remote).",
			Fields: []Field{prID,
				{Name: "strategy", Type: "string", Doc: "merge (default), squash or rebase"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "sha", Type: "string", Doc: "the base's commit after the merge"}, {Name: "strategy", Type: "string"},
				{Name: "pushed", Type: "bool", Doc: "local forge: the base was pushed to its remote"}, {Name: "pr_state", Type: "string"}, {Name: "pr_id", Type: "string"}}},
	}
}

// VCSOps returns the vcs operation names.
func VCSOps() []string {
	var ops []string
	for _, s := range vcsOps() {
		ops = append(ops, s.Name)
	}
	return ops
}

// vcsSpecs are host.git and host.github, each with.op-carrying and per op.
func vcsSpecs() []Spec {
	var out []Spec
	for _, name := range vcsNames {
		what := "the vcs interface over git; pull requests on the forge git config kitsoki.forge picks (local, the default, or github)"
		if name == "host.github" {
			what = "the vcs interface over git, pull requests on GitHub through the gh CLI"
		}
		out = append(out, family(name, what, vcsOps())...)
	}
	return out
}

// family returns a handler carrying with.op and one handler per op (each
// op's fields also taking call), all checked.
func family(name, what string, ops []Spec) []Spec {
	var names []string
	for _, o := range ops {
		names = append(names, o.Name)
	}
	all := Spec{Name: name, Summary: strings.ToUpper(what[:1]) + what[1:] + ": with.op selects " + strings.Join(names, ", ") + " (each is also " + name + ".<op>).",
		Fields: []Field{{Name: "op", Type: "string", Required: true, Doc: strings.Join(names, ", ")}}, CheckFields: true}
	out := make([]Spec, 0, len(ops)+1)
	for _, o := range ops {
		o.Name = name + "." + o.Name
		o.CheckFields = true
		op := strings.TrimPrefix(o.Name, name+".")
		for _, f := range o.Fields {
			if i := slices.IndexFunc(all.Fields, func(g Field) bool { return g.Name == f.Name }); i >= 0 {
				all.Fields[i].Doc += ", " + op
				continue
			}
			all.Fields = append(all.Fields, Field{Name: f.Name, Type: f.Type, Doc: op})
		}
		for _, f := range o.Results {
			if !slices.ContainsFunc(all.Results, func(r Field) bool { return r.Name == f.Name }) {
				all.Results = append(all.Results, f)
			}
		}
		out = append(out, o)
	}
	return append(out, all)
}

// ciOps are the operations of the ci interface.
func ciOps() []Spec {
	limits := []Field{
		{Name: "timeout", Type: "duration", Doc: "e.g. 5m or a number of seconds; default 10m; the process group is stopped when it passes"},
		{Name: "max_output", Type: "int", Doc: "bytes of log kept (default 1048576); counts are read from all of it"},
	}
	runResults := []Field{
		{Name: "ok", Type: "bool", Doc: "the command exited 0 (and no test failed)"},
		{Name: "state", Type: "string", Doc: "success or failure"},
		{Name: "log", Type: "string", Doc: "the output, stdout and stderr as written (go test -json: go test's text)"},
		{Name: "exit_code", Type: "int", Doc: "-1 when a signal ended it"},
		{Name: "command", Type: "string", Doc: "the command that ran"},
		{Name: "truncated", Type: "bool", Doc: "the log went past max_output"},
		{Name: "sha", Type: "string", Doc: "the commit the run was recorded against as a check (local forge)"},
	}
	return []Spec{
		{Name: "run_tests", Summary: "Run the tests in a work tree (with.test_cmd, else git config kitsoki.ci.test, else detected: go test, cargo test, npm test, make test, pytest).",
			Fields: append([]Field{workdirField,
				{Name: "test_cmd", Type: "string", Doc: "the command line (run with bash -c); empty: the configured or detected one"},
				{Name: "target", Type: "string", Doc: "what to test: replaces ./... for go test, else appended as one argument"},
				{Name: "junit", Type: "string", Doc: "a JUnit XML report the command writes (relative to the work tree): the counts come from it"}}, limits...),
			Results: append(runResults,
				Field{Name: "passed", Type: "int", Doc: "tests passed, when the output is go test, JUnit, TAP, cargo, pytest or jest shaped (absent otherwise)"},
				Field{Name: "failed", Type: "int"}, Field{Name: "skipped", Type: "int"},
				Field{Name: "junit", Type: "string", Doc: "with.junit as given"})},
		{Name: "build", Summary: "Build a work tree (with.build_cmd, else git config kitsoki.ci.build, else detected: go build, cargo build, npm run build, make; none: nothing to build, ok).",
			Fields: append([]Field{workdirField,
				{Name: "build_cmd", Type: "string", Doc: "the command line (run with bash -c); empty: the configured or detected one"},
				{Name: "target", Type: "string", Doc: "what to build: replaces ./... for go build, else appended as one argument"}}, limits...),
			Results: append(runResults, Field{Name: "skipped_run", Type: "bool", Doc: "no build command was given, configured or detected"})},
		{Name: "remote_status", Summary: "A pull request's CI state from the forge (local: the checks run_tests and build recorded for its head).",
			Fields: []Field{{Name: "pr_id", Type: "string", Required: true, Doc: "the pull request (open_pr's pr_id)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "state", Type: "string", Doc: "success, failure or pending"},
				{Name: "checks", Type: "string", Doc: "the failing checks' names, comma-separated"},
				{Name: "check_runs", Type: "list", Doc: "one {name, state, sha, summary, log, url} per check"},
				{Name: "pr_id", Type: "string"}, {Name: "head_sha", Type: "string"}, {Name: "pr_state", Type: "string"}, {Name: "url", Type: "string"}}},
	}
}

// CIOps returns the ci operation names.
func CIOps() []string {
	var ops []string
	for _, s := range ciOps() {
		ops = append(ops, s.Name)
	}
	return ops
}
