// Package jobs holds the handlers a story uses to look at its session's
// background jobs and inbox: host.jobs.list, .status, .cancel and
// .answer_clarification, and host.inbox.add, .list and .mark_read. Each
// runtime registers them over its session's scheduler and inbox.
package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/catalog"
)

// The handler names.
const (
	List      = "host.jobs.list"
	Status    = "host.jobs.status"
	Cancel    = "host.jobs.cancel"
	Answer    = "host.jobs.answer_clarification"
	InboxAdd  = "host.inbox.add"
	InboxList = "host.inbox.list"
	InboxRead = "host.inbox.mark_read"
)

// Register installs the handlers on h over a session's scheduler and inbox.
func Register(h *host.Host, s *jobs.Scheduler, b *inbox.Inbox) {
	hs := handlers{s: s, b: b}
	for _, op := range []struct {
		name string
		f    func(args map[string]any) (map[string]any, error)
	}{
		{List, hs.list},
		{Status, hs.status},
		{Cancel, hs.cancel},
		{Answer, hs.answer},
		{InboxAdd, hs.inboxAdd},
		{InboxList, hs.inboxList},
		{InboxRead, hs.inboxRead},
	} {
		register(h, op.name, op.f)
	}
}

// register installs one handler: its fields are checked against the
// catalog first, its data gets ok (false with the error, which names the
// handler), and a failure is the call's result, not a Go error.
func register(h *host.Host, name string, f func(args map[string]any) (map[string]any, error)) {
	h.Register(name, host.HandlerFunc(func(_ context.Context, call *host.Call) (*host.Result, error) {
		if err := checkFields(name, call.Args); err != nil {
			return &host.Result{Data: map[string]any{"ok": false}, Err: err}, nil
		}
		data, err := f(call.Args)
		if err != nil {
			if data == nil {
				data = map[string]any{}
			}
			data["ok"] = false
			return &host.Result{Data: data, Err: fmt.Errorf("%s: %w", name, err)}, nil
		}
		data["ok"] = true
		return &host.Result{Data: data}, nil
	}))
}

// handlers are the operations over one session's scheduler and inbox.
type handlers struct {
	s *jobs.Scheduler
	b *inbox.Inbox
}

// list lists the jobs, all or those with with.status.
func (h handlers) list(args map[string]any) (map[string]any, error) {
	status, err := str(args, "status")
	if err != nil {
		return nil, err
	}
	if status != "" && !slices.Contains(statuses, jobs.Status(status)) {
		return nil, fmt.Errorf("with.status %q is not a job status (%s)", status, statusNames())
	}
	list := []any{}
	for _, i := range h.s.List() {
		if status == "" || string(i.Status) == status {
			list = append(list, i.Map())
		}
	}
	return map[string]any{"jobs": list, "count": int64(len(list))}, nil
}

// status describes the job with.job_id names.
func (h handlers) status(args map[string]any) (map[string]any, error) {
	id, err := jobID(args)
	if err != nil {
		return nil, err
	}
	i, err := h.s.Get(id)
	if err != nil {
		return nil, err
	}
	return i.Map(), nil
}

// cancel cancels the job with.job_id names; its completion is delivered as cancelled.
func (h handlers) cancel(args map[string]any) (map[string]any, error) {
	id, err := jobID(args)
	if err != nil {
		return nil, err
	}
	i, err := h.s.Cancel(id)
	if err != nil {
		return map[string]any{"job_id": id, "status": string(i.Status)}, err
	}
	return map[string]any{"job_id": id, "status": string(i.Status)}, nil
}

// answer hands with.answer to the job with.job_id names, which waits on a question.
func (h handlers) answer(args map[string]any) (map[string]any, error) {
	id, err := jobID(args)
	if err != nil {
		return nil, err
	}
	ans, ok := args["answer"]
	if !ok || ans == nil {
		return nil, fmt.Errorf("with.answer is required: the answer the job asked for")
	}
	if _, err := h.s.Answer(id, ans); err != nil {
		return map[string]any{"job_id": id}, err
	}
	return map[string]any{"job_id": id}, nil
}

// inboxAdd posts a notification; it needs a title or a body.
func (h handlers) inboxAdd(args map[string]any) (map[string]any, error) {
	n := inbox.Notification{}
	for _, f := range []struct {
		key string
		dst *string
	}{{"severity", &n.Severity}, {"kind", &n.Kind}, {"title", &n.Title}, {"thread", &n.Thread}, {"state", &n.State}, {"job_id", &n.JobID}} {
		v, err := str(args, f.key)
		if err != nil {
			return nil, err
		}
		*f.dst = v
	}
	body, err := text(args["body"])
	if err != nil {
		return nil, err
	}
	n.Body = body
	if n.Title == "" && n.Body == "" {
		return nil, fmt.Errorf("with.title (or with.body) is required: what the notification says")
	}
	added, err := h.b.Add(n)
	if err != nil {
		return nil, fmt.Errorf("with.%w", err)
	}
	return map[string]any{"id": added.ID}, nil
}

// inboxList lists the notifications (with.unread_only: the unread ones) and the inbox summary.
func (h handlers) inboxList(args map[string]any) (map[string]any, error) {
	unread := false
	if v, ok := args["unread_only"]; ok && v != nil {
		bv, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("with.unread_only must be true or false, got %T", v)
		}
		unread = bv
	}
	list := []any{}
	for _, n := range h.b.List(unread) {
		list = append(list, n.Map())
	}
	sum := h.b.Summary()
	return map[string]any{"notifications": list, "unread": int64(sum.Unread), "needs_attention": int64(sum.NeedsAttention)}, nil
}

// inboxRead marks the notification with.id names read.
func (h handlers) inboxRead(args map[string]any) (map[string]any, error) {
	id, err := str(args, "id")
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, fmt.Errorf("with.id is required: the notification's id (n-1, n-2, …, as host.inbox.add returned it)")
	}
	if _, err := h.b.MarkRead(id); err != nil {
		return nil, err
	}
	return map[string]any{"id": id}, nil
}

var statuses = []jobs.Status{jobs.Running, jobs.AwaitingInput, jobs.Done, jobs.Failed, jobs.Cancelled}

func statusNames() string {
	out := make([]string, len(statuses))
	for i, s := range statuses {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// checkFields refuses a with: key the handler does not take.
func checkFields(name string, args map[string]any) error {
	spec, ok := catalog.Lookup(name)
	if !ok {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if _, ok := spec.Field(k); !ok && k != "call" {
			names := make([]string, len(spec.Fields))
			for i, f := range spec.Fields {
				names[i] = f.Name
			}
			return fmt.Errorf("%s: with.%s is not a field of %s (fields: %s)", name, k, name, strings.Join(names, ", "))
		}
	}
	return nil
}

func jobID(args map[string]any) (string, error) {
	id, err := str(args, "job_id")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("with.job_id is required: the background job's id (bind job_id when starting it, or read world.last_job_id)")
	}
	return id, nil
}

func str(args map[string]any, k string) (string, error) {
	v, ok := args[k]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("with.%s must be a string, got %T", k, v)
	}
	return s, nil
}

// text is a body: a string as is, other values as indented JSON.
func text(v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("with.body: %w", err)
	}
	return string(b), nil
}
