package catalog

// chatSpecs are the host.chat.* handlers: durable conversations of a
// session, kept beside it in the sessions directory.
func chatSpecs() []Spec {
	scope := []Field{
		{Name: "app", Type: "string", Required: true, Doc: "the story (app id) the chat belongs to"},
		{Name: "room", Type: "string", Required: true, Doc: "the room (state) it is about"},
		{Name: "scope_key", Type: "string", Doc: "a further key inside the room (a workspace id, a ticket)"},
	}
	chatID := Field{Name: "chat_id", Type: "string", Required: true, Doc: "the chat (resolve's or create's chat_id)"}
	summary := []Field{{Name: "ok", Type: "bool"}, {Name: "chat_id", Type: "string"}, {Name: "title", Type: "string"},
		{Name: "status", Type: "string", Doc: "active or archived"}}
	title := Field{Name: "title", Type: "string", Doc: "the title a new chat gets"}
	driveFields := []Field{
		{Name: "chat_id", Type: "string", Doc: "the chat (or chat_ref)"},
		{Name: "chat_ref", Type: "string", Doc: "a reference resolve_ref understands, with app and room"},
		{Name: "app", Type: "string", Doc: "with chat_ref"}, {Name: "room", Type: "string", Doc: "with chat_ref"}, {Name: "scope_key", Type: "string", Doc: "with chat_ref"},
		{Name: "payload", Type: "string", Required: true, Doc: "the user's message of the turn"},
		{Name: "agent", Type: "string", Doc: "persona from agents: that answers"},
		{Name: "working_dir", Type: "string", Doc: "the agent's working directory"},
		{Name: "await", Type: "bool", Doc: "true (the default): the turn runs in the call; false is refused (put background: true on the invoke to not wait)"},
		{Name: "timeout_seconds", Type: "int", Doc: "how long to wait for a chat another call is driving (default 300)"},
		{Name: "transport", Type: "string", Doc: "where the message came from (tui, mcp, state_machine, …; default state_machine)"},
		{Name: "thread", Type: "string", Doc: "kept on the turn's user message"}, {Name: "actor", Type: "string", Doc: "kept on the turn's user message"},
		{Name: "correlation_id", Type: "string", Doc: "the caller's id of the turn: kept on its user message and returned"},
	}
	return []Spec{
		{Name: "host.chat.resolve", Summary: "Get or create the session's chat for (app, room, scope_key).", CheckFields: true,
			Fields: append(scope, title), Results: append(summary, Field{Name: "is_new", Type: "bool", Doc: "the chat was created by this call"})},
		{Name: "host.chat.create", Summary: "Create a new chat (every call makes one; use resolve in on_enter).", CheckFields: true,
			Fields: append(scope, title), Results: append(summary, Field{Name: "is_new", Type: "bool"})},
		{Name: "host.chat.list", Summary: "List the session's chats of (app, room[, scope_key]), newest activity first.", CheckFields: true,
			Fields: append(scope, Field{Name: "all_status", Type: "bool", Doc: "archived chats too"}),
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "chats", Type: "list", Doc: "one {id, title, message_count, last_active_at, status} per chat"},
				{Name: "count", Type: "int"}, {Name: "rendered", Type: "string", Doc: "the list as Markdown, for a view"}}},
		{Name: "host.chat.transcript", Summary: "A chat's messages.", CheckFields: true,
			Fields: []Field{chatID, {Name: "since_seq", Type: "int", Doc: "only messages after this seq"}, {Name: "max_turns", Type: "int", Doc: "at most this many, the latest (default 20)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "messages", Type: "list", Doc: "one {seq, role, text, at} per message"},
				{Name: "latest_seq", Type: "int"}, {Name: "title", Type: "string"}, {Name: "rendered", Type: "string", Doc: "the messages as Markdown"}}},
		{Name: "host.chat.fork", Summary: "Copy a chat's messages into a new chat (its parent_chat_id the old one).", CheckFields: true,
			Fields:  []Field{chatID, {Name: "title", Type: "string", Doc: "default the old title with (fork)"}},
			Results: append(summary, Field{Name: "parent_chat_id", Type: "string"})},
		{Name: "host.chat.archive", Summary: "Archive a chat (list hides it unless all_status).", CheckFields: true,
			Fields: []Field{chatID}, Results: summary},
		{Name: "host.chat.rename", Summary: "Set a chat's title.", CheckFields: true,
			Fields: []Field{chatID, {Name: "title", Type: "string", Required: true, Doc: "the new title"}}, Results: summary},
		{Name: "host.chat.suggest_title", Summary: "Ask an agent for a 4-8 word title from the chat's transcript (an agent call: recorded and replayed like any).", CheckFields: true,
			Fields:  []Field{chatID, {Name: "agent", Type: "string", Doc: "persona from agents: that answers"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "chat_id", Type: "string"}, {Name: "title", Type: "string", Doc: "the suggestion (the chat is not renamed)"}}},
		{Name: "host.chat.resolve_ref", Summary: "Resolve a reference to a chat: its id, an id prefix, a position in list (1 = the newest), \"current\", or words of its title.", CheckFields: true,
			Fields:  append([]Field{{Name: "ref", Type: "string", Required: true, Doc: "the reference"}}, scope...),
			Results: summary},
		{Name: "host.chat.drive", Summary: "Run one turn of a chat: the payload and the agent's answer are added to its transcript (the answer through host.agent.converse).", CheckFields: true,
			Fields: driveFields,
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "drive_id", Type: "string", Doc: "<chat_id>#<seq of the user message>"},
				{Name: "chat_id", Type: "string"}, {Name: "enqueued_at", Type: "int", Doc: "Unix microseconds"},
				{Name: "status", Type: "string", Doc: "done or failed"}, {Name: "result_seq", Type: "int"}, {Name: "result_text", Type: "string"}, {Name: "error", Type: "string"},
				{Name: "correlation_id", Type: "string", Doc: "with.correlation_id as given"}}},
	}
}

// ideSpecs are the host.ide.* handlers: the editor the run is set to use,
// else the terminal.
func ideSpecs() []Spec {
	path := Field{Name: "path", Type: "string", Required: true, Doc: "a file inside the workspace"}
	surface := Field{Name: "surface", Type: "string", Doc: "editor:<name> (the editor showed it), text (printed on the run's output) or none"}
	connected := Field{Name: "connected", Type: "bool", Doc: "an editor was used"}
	return []Spec{
		{Name: "host.ide.open_file", Summary: "Open a file in the run's editor (KITSOKI_EDITOR, git config kitsoki.editor, $VISUAL, $EDITOR), else name it on the run's output.", CheckFields: true,
			Fields:  []Field{path, {Name: "line", Type: "int", Doc: "the line to show"}, {Name: "column", Type: "int"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "path", Type: "string", Doc: "absolute"}, {Name: "opened", Type: "bool", Doc: "the editor opened it"}, connected, surface}},
		{Name: "host.ide.open_diff", Summary: "Show a file against proposed content (code --wait --diff, else printed) and ask the operator for the verdict; accepted writes the proposed content into the file.", CheckFields: true,
			Fields: []Field{path,
				{Name: "new_text", Type: "string", Doc: "the proposed content"},
				{Name: "new_text_path", Type: "string", Doc: "a file inside the workspace holding it (give one of the two)"},
				{Name: "title", Type: "string", Doc: "shown with the diff and in the question"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "verdict", Type: "string", Doc: "accepted, rejected, or empty when nobody could answer (no operator, nothing shown)"},
				{Name: "applied", Type: "bool", Doc: "the proposed content was written into path"}, {Name: "reviewed", Type: "bool", Doc: "the diff was shown"},
				surface, connected, {Name: "diff", Type: "string", Doc: "the unified diff"}, {Name: "path", Type: "string"}}},
		{Name: "host.ide.get_open_editors", Summary: "The files this run opened in the editor (open_file, open_diff), in order.", CheckFields: true,
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "editors", Type: "list", Doc: "one {path, line} per file"}, {Name: "count", Type: "int"}, connected, surface}},
		{Name: "host.ide.get_selection", Summary: "The editor's selection: needs a live link to the editor, which kitsoki does not hold, so connected is false.", CheckFields: true,
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "connected", Type: "bool", Doc: "always false"}, {Name: "file", Type: "string"}, {Name: "text", Type: "string"},
				{Name: "range", Type: "map"}, {Name: "reason", Type: "string"}}},
		{Name: "host.ide.get_diagnostics", Summary: "The editor's diagnostics: needs a live link to the editor, which kitsoki does not hold, so connected is false and the list empty.", CheckFields: true,
			Fields:  []Field{{Name: "path", Type: "string", Doc: "a file to ask about"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "connected", Type: "bool", Doc: "always false"}, {Name: "diagnostics", Type: "list"}, {Name: "count", Type: "int"}, {Name: "reason", Type: "string"}}},
	}
}

// ghTicketOps are host.gh.ticket's operations: the ticket interface over
// GitHub Issues.
func ghTicketOps() []Spec {
	repo := Field{Name: "repo", Type: "string", Required: true, Doc: "the GitHub repository, owner/name"}
	id := Field{Name: "id", Type: "string", Required: true, Doc: "the issue number (42, #42 or owner/name#42)"}
	summary := "one {id, title, status, priority, assignee, url, type, source} per issue"
	return []Spec{
		{Name: "create", Summary: "Open an issue (labels from severity, component, target; kitsoki's metadata in a fenced block of the body).",
			Fields: []Field{repo, {Name: "title", Type: "string", Required: true, Doc: "the issue's title"}, {Name: "body", Type: "string"},
				{Name: "severity", Type: "string", Doc: "P0..P3, a label"}, {Name: "component", Type: "string", Doc: "the label comp:<component>"},
				{Name: "target", Type: "string", Doc: "the label target:<target>"}, {Name: "labels", Type: "list", Doc: "more labels"},
				{Name: "trace_ref", Type: "string"}, {Name: "kitsoki_rev", Type: "string"}, {Name: "filed_by", Type: "string"},
				{Name: "legacy_id", Type: "string"}, {Name: "repro_command", Type: "string"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "number", Type: "int"}, {Name: "url", Type: "string"}}},
		{Name: "search", Summary: "Find issues (gh issue list --search).",
			Fields:  []Field{repo, {Name: "query", Type: "string", Doc: "GitHub's search syntax (empty: the open issues)"}, {Name: "limit", Type: "int"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "tickets", Type: "list", Doc: summary}}},
		{Name: "get", Summary: "Read an issue with its comments and kitsoki's metadata block.",
			Fields: []Field{repo, id},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "title", Type: "string"}, {Name: "body", Type: "string"},
				{Name: "status", Type: "string"}, {Name: "priority", Type: "string"}, {Name: "assignee", Type: "string"}, {Name: "url", Type: "string"},
				{Name: "type", Type: "string", Doc: "bug, feature or epic, from labels or the title; never empty"}, {Name: "source", Type: "string", Doc: "github"},
				{Name: "comments", Type: "list", Doc: "one {id, author, created_at, body} per comment"}, {Name: "repro_command", Type: "string"},
				{Name: "legacy_id", Type: "string"}, {Name: "kitsoki_meta", Type: "map"}}},
		{Name: "comment", Summary: "Comment on an issue.",
			Fields:  []Field{repo, id, {Name: "body", Type: "string", Required: true, Doc: "the comment's Markdown text"}, {Name: "thread", Type: "string", Doc: "accepted for Kitsoki's stories; the issue is with.id"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "comment_id", Type: "string", Doc: "the comment's URL"}, {Name: "id", Type: "string"}}},
		{Name: "transition", Summary: "Close, reopen or mark an issue in progress.",
			Fields:  []Field{repo, id, {Name: "to", Type: "string", Required: true, Doc: "resolved (closed, done, fixed, wontfix), open (reopened, todo) or in_progress"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "status", Type: "string"}}},
		{Name: "list_mine", Summary: "List an assignee's issues (default @me).",
			Fields:  []Field{repo, {Name: "filter", Type: "string", Doc: "the assignee (a leading assignee= is dropped; default @me)"}},
			Results: []Field{{Name: "ok", Type: "bool"}, {Name: "tickets", Type: "list", Doc: summary}}},
	}
}

// GHTicketOps returns host.gh.ticket's operation names.
func GHTicketOps() []string {
	var ops []string
	for _, s := range ghTicketOps() {
		ops = append(ops, s.Name)
	}
	return ops
}

// workspaceManagerSpecs is host.workspace_manager.get.
func workspaceManagerSpecs() []Spec {
	return []Spec{{Name: "host.workspace_manager.get", CheckFields: true,
		Summary: "Load a workspace snapshot (id, root path, repos, issue, pull requests) from the workspace-manager CLI ($KITSOKI_WORKSPACE_MANAGER, else workspace-manager on PATH: <cmd> get <workspace_id> prints JSON).",
		Fields:  []Field{{Name: "workspace_id", Type: "string", Required: true, Doc: "the workspace the CLI knows"}},
		Results: []Field{{Name: "ok", Type: "bool"}, {Name: "id", Type: "string"}, {Name: "root_path", Type: "string"},
			{Name: "repos", Type: "list", Doc: "one {name, path, branch, …} per repository"}, {Name: "issue", Type: "map"}, {Name: "prs", Type: "list"},
			{Name: "<key>", Type: "any", Doc: "every other key the CLI printed"}}}}
}
