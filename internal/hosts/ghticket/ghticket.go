// Package ghticket is host.gh.ticket: the ticket interface over GitHub
// Issues, driven through the gh CLI (gh auth login signs it in; kitsoki
// handles no token). Its operations mirror host.local_files.ticket's, so a
// story rebinds iface.ticket to it without touching its rooms; each op
// takes repo (owner/name) so it never falls back on whatever repository
// the working directory's remote names.
package ghticket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/hosts/cmdrun"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// Name is the handler.
const Name = "host.gh.ticket"

// missing is what to do when gh is not installed.
const missing = "install the GitHub CLI (https://cli.github.com) and sign in with gh auth login, or bind iface.ticket to host.local_files.ticket"

// Config is what the handler needs of the run.
type Config struct {
	Workspace workspace.Root
	Logger    *slog.Logger
	// GH is the program (default "gh", looked up in PATH).
	GH string
}

// Handler is host.gh.ticket for one run.
type Handler struct {
	cfg Config
	gh  cmdrun.Tool
}

// Register installs host.gh.ticket (with.op) and host.gh.ticket.<op>.
func Register(h *host.Host, cfg Config) {
	if cfg.GH == "" {
		cfg.GH = "gh"
	}
	hd := &Handler{cfg: cfg, gh: cmdrun.Tool{Program: cfg.GH, Logger: cfg.Logger, Missing: missing, Root: cfg.Workspace,
		Env: []string{"GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1", "NO_COLOR=1"}}}
	h.Register(Name, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
		op, _ := call.Args["op"].(string)
		if op == "" {
			return fail(Name, fmt.Errorf("with.op is required: one of %s (or invoke %s.<op>)", strings.Join(catalog.GHTicketOps(), ", "), Name), nil), nil
		}
		return hd.Invoke(ctx, call, op), nil
	}))
	for _, op := range catalog.GHTicketOps() {
		h.Register(Name+"."+op, host.HandlerFunc(func(ctx context.Context, call *host.Call) (*host.Result, error) {
			return hd.Invoke(ctx, call, op), nil
		}))
	}
}

func fail(name string, err error, data map[string]any) *host.Result {
	d := map[string]any{}
	maps.Copy(d, data)
	d["ok"] = false
	return &host.Result{Data: d, Err: fmt.Errorf("%s: %w", name, err)}
}

// Invoke runs op; every failure is a domain error of the call.
func (hd *Handler) Invoke(ctx context.Context, call *host.Call, op string) *host.Result {
	name := Name + "." + op
	if !slices.Contains(catalog.GHTicketOps(), op) {
		return fail(Name, fmt.Errorf("with.op %q is not an operation (operations: %s)", op, strings.Join(catalog.GHTicketOps(), ", ")), nil)
	}
	if err := catalog.CheckArgs(name, call.Args); err != nil {
		return fail(name, err, nil)
	}
	a := args(call.Args)
	repo, err := a.repo()
	if err != nil {
		return fail(name, err, nil)
	}
	var data map[string]any
	switch op {
	case "create":
		data, err = hd.create(ctx, a, repo)
	case "search", "list_mine":
		data, err = hd.list(ctx, a, repo, op)
	case "get":
		data, err = hd.get(ctx, a, repo)
	case "comment":
		data, err = hd.comment(ctx, a, repo)
	case "transition":
		data, err = hd.transition(ctx, a, repo)
	}
	if err != nil {
		return fail(name, err, data)
	}
	data["ok"] = true
	return &host.Result{Data: data}
}

// run runs gh; a sign-in it lacks is an error naming gh auth login.
func (hd *Handler) run(ctx context.Context, args ...string) (string, error) {
	dir := ""
	if !hd.cfg.Workspace.IsZero() {
		dir = hd.cfg.Workspace.Dir()
	}
	out, err := hd.gh.Run(ctx, dir, args...)
	var ee *cmdrun.ExitError
	if errors.As(err, &ee) {
		msg := ee.Message()
		if strings.Contains(msg, "gh auth login") {
			return "", errors.New("gh is not signed in to GitHub: run gh auth login")
		}
		return "", fmt.Errorf("gh %s: %s", strings.Join(args[:min(2, len(args))], " "), msg)
	}
	return out.Stdout, err
}

type args map[string]any

func (a args) str(key string) string {
	switch v := a[key].(type) {
	case string:
		return strings.TrimSpace(v)
	case nil:
		return ""
	default:
		return strings.TrimSpace(fmt.Sprint(v))
	}
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// repo is with.repo, owner/name: required, so gh never guesses it.
func (a args) repo() (string, error) {
	r := a.str("repo")
	if r == "" {
		return "", errors.New("with.repo is required: the GitHub repository as owner/name (e.g. repo: acme/widgets)")
	}
	if !repoName.MatchString(r) || strings.HasPrefix(r, "-") {
		return "", fmt.Errorf("with.repo %q is not owner/name (e.g. acme/widgets)", r)
	}
	return r, nil
}

// id is with.id as an issue number: 42, #42 or owner/name#42.
func (a args) id() (string, error) {
	raw := a.str("id")
	if raw == "" {
		return "", errors.New("with.id is required: the issue number (e.g. 42)")
	}
	s := raw
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	if n, err := strconv.Atoi(s); err != nil || n <= 0 {
		return "", fmt.Errorf("with.id %q is not a GitHub issue number (e.g. 42 or #42)", raw)
	}
	return s, nil
}

func (hd *Handler) create(ctx context.Context, a args, repo string) (map[string]any, error) {
	title := a.str("title")
	if title == "" {
		return nil, errors.New("with.title is required: the issue's title")
	}
	body := a.str("body")
	if meta := metaBlock(a); meta != "" {
		body = strings.TrimSpace(body + "\n\n" + meta)
	}
	argv := []string{"issue", "create", "--repo", repo, "--title", title, "--body", body}
	for _, l := range labels(a) {
		argv = append(argv, "--label", l)
	}
	out, err := hd.run(ctx, argv...)
	if err != nil {
		return nil, err
	}
	m := issueURL.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("gh issue create printed no issue URL: %q", strings.TrimSpace(out))
	}
	n, _ := strconv.Atoi(m[1])
	return map[string]any{"id": m[1], "number": int64(n), "url": m[0]}, nil
}

var issueURL = regexp.MustCompile(`https?://\S+/issues/(\d+)`)

// labels maps the bug axes to GitHub labels: severity P0..P3 as itself,
// component x as comp:x, target x as target:x, and with.labels as given.
func labels(a args) []string {
	var out []string
	if s := a.str("severity"); s != "" {
		out = append(out, s)
	}
	if c := a.str("component"); c != "" {
		out = append(out, "comp:"+c)
	}
	if t := a.str("target"); t != "" {
		out = append(out, "target:"+t)
	}
	if ls, ok := a["labels"].([]any); ok {
		for _, l := range ls {
			if s, ok := l.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// metaBlock is the kitsoki metadata block create writes into the body
// (GitHub has no custom fields): trace_ref, kitsoki_rev, filed_by,
// legacy_id, repro_command.
func metaBlock(a args) string {
	var lines []string
	for _, k := range []string{"trace_ref", "kitsoki_rev", "filed_by", "legacy_id", "repro_command"} {
		if v := a.str(k); v != "" {
			lines = append(lines, k+": "+v)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "```kitsoki\n" + strings.Join(lines, "\n") + "\n```"
}

// ghIssue is what gh issue view/list --json gives.
type ghIssue struct {
	Number    int                      `json:"number"`
	Title     string                   `json:"title"`
	Body      string                   `json:"body"`
	State     string                   `json:"state"`
	URL       string                   `json:"url"`
	Labels    []struct{ Name string }  `json:"labels"`
	Assignees []struct{ Login string } `json:"assignees"`
	Comments  []struct {
		ID        string                 `json:"id"`
		Author    struct{ Login string } `json:"author"`
		Body      string                 `json:"body"`
		CreatedAt string                 `json:"createdAt"`
	} `json:"comments"`
}

const listFields = "number,title,state,url,labels,assignees"

func (hd *Handler) list(ctx context.Context, a args, repo, op string) (map[string]any, error) {
	argv := []string{"issue", "list", "--repo", repo, "--json", listFields}
	if op == "search" {
		if q := a.str("query"); q != "" {
			argv = append(argv, "--search", q)
		}
		if v, ok := a["limit"]; ok && v != nil && v != "" {
			n, ok := number.Int(v)
			if !ok || n < 0 {
				return nil, fmt.Errorf("with.limit must be a whole number, got %v", v)
			}
			if n > 0 {
				argv = append(argv, "--limit", strconv.FormatInt(n, 10))
			}
		}
	} else {
		who := strings.TrimPrefix(a.str("filter"), "assignee=")
		if who == "" {
			who = "@me"
		}
		argv = append(argv, "--assignee", who)
	}
	out, err := hd.run(ctx, argv...)
	if err != nil {
		return nil, err
	}
	var is []ghIssue
	if err := json.Unmarshal([]byte(out), &is); err != nil {
		return nil, fmt.Errorf("gh issue list: unreadable JSON: %w", err)
	}
	tickets := []any{}
	for i := range is {
		tickets = append(tickets, is[i].summary())
	}
	return map[string]any{"tickets": tickets}, nil
}

// summary is a ticket as the ticket interface lists it.
func (i *ghIssue) summary() map[string]any {
	var names []string
	for _, l := range i.Labels {
		names = append(names, l.Name)
	}
	assignee := ""
	if len(i.Assignees) > 0 {
		assignee = i.Assignees[0].Login
	}
	return map[string]any{"id": strconv.Itoa(i.Number), "title": i.Title, "status": strings.ToLower(i.State), "priority": priority(names),
		"assignee": assignee, "url": i.URL, "type": classify(names, i.Title), "source": "github"}
}

func priority(labels []string) string {
	for _, l := range labels {
		if len(l) == 2 && l[0] == 'P' && l[1] >= '0' && l[1] <= '3' {
			return l
		}
	}
	return ""
}

// classify is a ticket's type from its labels (bug, feature or
// enhancement, epic; also kind: and type: prefixed), else a keyword of its
// title, else bug: a type is never empty.
func classify(labels []string, title string) string {
	for _, l := range labels {
		l = strings.ToLower(l)
		l = strings.TrimPrefix(strings.TrimPrefix(l, "kind:"), "type:")
		switch l {
		case "bug", "epic":
			return l
		case "feature", "enhancement":
			return "feature"
		}
	}
	t := strings.ToLower(title)
	switch {
	case strings.Contains(t, "epic"):
		return "epic"
	case strings.Contains(t, "feature") || strings.HasPrefix(t, "add ") || strings.Contains(t, "support "):
		return "feature"
	}
	return "bug"
}

var metaFence = regexp.MustCompile("(?s)```kitsoki\\n(.*?)\\n```")

func (hd *Handler) get(ctx context.Context, a args, repo string) (map[string]any, error) {
	id, err := a.id()
	if err != nil {
		return nil, err
	}
	out, err := hd.run(ctx, "issue", "view", id, "--repo", repo, "--json", listFields+",body,comments")
	if err != nil {
		return nil, err
	}
	var is ghIssue
	if err := json.Unmarshal([]byte(out), &is); err != nil {
		return nil, fmt.Errorf("gh issue view: unreadable JSON: %w", err)
	}
	data := is.summary()
	data["body"] = is.Body
	comments := []any{}
	for n, c := range is.Comments {
		comments = append(comments, map[string]any{"id": fmt.Sprintf("%d#%d", is.Number, n+1), "author": c.Author.Login, "created_at": c.CreatedAt, "body": c.Body})
	}
	data["comments"] = comments
	data["repro_command"] = ""
	if m := metaFence.FindStringSubmatch(is.Body); m != nil {
		meta := map[string]any{}
		for _, l := range strings.Split(m[1], "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				meta[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		data["kitsoki_meta"] = meta
		if v, ok := meta["legacy_id"]; ok {
			data["legacy_id"] = v
		}
		if v, ok := meta["repro_command"]; ok {
			data["repro_command"] = v
		}
	}
	return data, nil
}

func (hd *Handler) comment(ctx context.Context, a args, repo string) (map[string]any, error) {
	id, err := a.id()
	if err != nil {
		return nil, err
	}
	body := a.str("body")
	if body == "" {
		return nil, errors.New("with.body is required (e.g. body: \"Fixed in abc123.\")")
	}
	out, err := hd.run(ctx, "issue", "comment", id, "--repo", repo, "--body", body)
	if err != nil {
		return nil, err
	}
	return map[string]any{"comment_id": strings.TrimSpace(out), "id": id}, nil
}

// transition closes (closed, resolved, done, fixed, wontfix), reopens
// (open, reopened, todo) or labels (in_progress) an issue.
func (hd *Handler) transition(ctx context.Context, a args, repo string) (map[string]any, error) {
	id, err := a.id()
	if err != nil {
		return nil, err
	}
	to := strings.ToLower(a.str("to"))
	var argv []string
	switch to {
	case "closed", "resolved", "done", "fixed", "wontfix", "completed":
		argv = []string{"issue", "close", id, "--repo", repo}
		if to == "wontfix" {
			argv = append(argv, "--reason", "not planned")
		}
	case "open", "reopened", "todo":
		argv = []string{"issue", "reopen", id, "--repo", repo}
	case "in_progress":
		argv = []string{"issue", "edit", id, "--repo", repo, "--add-label", "in_progress"}
	case "":
		return nil, errors.New("with.to is required: the new status (resolved, open, in_progress, …)")
	default:
		return nil, fmt.Errorf("with.to %q is not a status GitHub issues have: use resolved (or closed, done, fixed, wontfix), open or in_progress", to)
	}
	if _, err := hd.run(ctx, argv...); err != nil {
		return nil, err
	}
	return map[string]any{"id": id, "status": to}, nil
}
