package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

func setup(t *testing.T) (*host.Host, *jobs.Scheduler, *inbox.Inbox) {
	t.Helper()
	h := host.New(&story.Story{}, nil, trace.NewMemSink())
	s := jobs.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	t.Cleanup(s.Close)
	b := inbox.New()
	Register(h, s, b)
	return h, s, b
}

func call(t *testing.T, h *host.Host, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	res, err := h.Dispatch(context.Background(), &host.Call{Namespace: name, Args: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	msg := ""
	if res.Err != nil {
		msg = res.Err.Error()
	}
	return res.Data, msg
}

func TestJobsHandlers(t *testing.T) {
	h, s, _ := setup(t)
	id, _ := s.Submit(jobs.Spec{Handler: "host.run", Origin: "building", Run: func(ctx context.Context) jobs.Result {
		if _, err := jobs.RequestClarification(ctx, jobs.Question{Prompt: "Which?"}); err != nil {
			return jobs.Result{Infra: err}
		}
		return jobs.Result{Data: map[string]any{}}
	}})
	if err := s.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, msg := call(t, h, Status, map[string]any{"job_id": id})
	want := map[string]any{"ok": true, "job_id": "job-1", "handler": "host.run", "state": "building", "status": "awaiting_input",
		"question": map[string]any{"prompt": "Which?"}}
	if diff := cmp.Diff(want, data); diff != "" || msg != "" {
		t.Errorf("status (-want +got):\n%s %s", diff, msg)
	}
	data, _ = call(t, h, List, map[string]any{"status": "done"})
	if data["count"] != int64(0) {
		t.Errorf("list done: %v", data)
	}
	if _, msg := call(t, h, Answer, map[string]any{"job_id": id, "answer": "prod"}); msg != "" {
		t.Errorf("answer: %s", msg)
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{Status, map[string]any{}, "host.jobs.status: with.job_id is required: the background job's id (bind job_id when starting it, or read world.last_job_id)"},
		{Status, map[string]any{"job_id": "job-7"}, `host.jobs.status: no background job "job-7" (jobs: job-1)`},
		{Status, map[string]any{"job": "job-1"}, "host.jobs.status: with.job is not a field of host.jobs.status (fields: job_id)"},
		{List, map[string]any{"status": "stuck"}, `host.jobs.list: with.status "stuck" is not a job status (running, awaiting_input, done, failed, cancelled)`},
		{Answer, map[string]any{"job_id": "job-1"}, "host.jobs.answer_clarification: with.answer is required: the answer the job asked for"},
		{Answer, map[string]any{"job_id": "job-1", "answer": "again"}, "host.jobs.answer_clarification: background job job-1 already has an answer it has not read yet"},
		{Cancel, map[string]any{"job_id": "job-2"}, `host.jobs.cancel: no background job "job-2" (jobs: job-1)`},
	}
	for _, tt := range tests {
		data, msg := call(t, h, tt.name, tt.args)
		if msg != tt.want || data["ok"] != false {
			t.Errorf("%s %v:\n got %q (ok=%v)\nwant %q", tt.name, tt.args, msg, data["ok"], tt.want)
		}
	}
}

func TestInboxHandlers(t *testing.T) {
	h, _, b := setup(t)
	data, msg := call(t, h, InboxAdd, map[string]any{"kind": "checkpoint", "title": "Tests: T-1", "thread": "t", "state": "review",
		"body": map[string]any{"passed": true}})
	if msg != "" || data["id"] != "n-1" {
		t.Fatalf("add: %v %s", data, msg)
	}
	got := b.List(false)[0]
	if got.Body != "{\n  \"passed\": true\n}" || got.Severity != "info" || got.State != "review" {
		t.Errorf("stored: %+v", got)
	}
	call(t, h, InboxAdd, map[string]any{"title": "Page", "severity": "action_required"})
	data, _ = call(t, h, InboxList, map[string]any{"unread_only": true})
	if data["unread"] != int64(2) || data["needs_attention"] != int64(1) || len(data["notifications"].([]any)) != 2 {
		t.Errorf("list: %v", data)
	}
	if _, msg := call(t, h, InboxRead, map[string]any{"id": "n-2"}); msg != "" {
		t.Error(msg)
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{InboxAdd, map[string]any{"kind": "x"}, "host.inbox.add: with.title (or with.body) is required: what the notification says"},
		{InboxAdd, map[string]any{"title": "x", "severity": "loud"}, `host.inbox.add: with.severity "loud" is not one of info, success, warn, error, action_required`},
		{InboxAdd, map[string]any{"title": "x", "teleport": "y"}, "host.inbox.add: with.teleport is not a field of host.inbox.add (fields: title, body, severity, kind, thread, state, job_id)"},
		{InboxRead, map[string]any{"id": "n-9"}, `host.inbox.mark_read: no notification "n-9" (the inbox holds n-1 … n-2)`},
		{InboxList, map[string]any{"unread_only": "yes"}, "host.inbox.list: with.unread_only must be true or false, got string"},
	}
	for _, tt := range tests {
		if _, msg := call(t, h, tt.name, tt.args); msg != tt.want {
			t.Errorf("%s %v:\n got %q\nwant %q", tt.name, tt.args, msg, tt.want)
		}
	}
}
