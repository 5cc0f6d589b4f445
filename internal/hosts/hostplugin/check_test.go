package hostplugin

import (
	"context"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// loadDescribe loads testdata/describe with host.tickets running mode.
func loadDescribe(t *testing.T, mode string) *story.Story {
	t.Helper()
	st, err := story.Load("testdata/describe/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hp := st.HostPlugins["host.tickets"]
	h := helperDecl(t, mode)
	hp.Command, hp.Env = h.Command, h.Env
	return st
}

func diagStrings(ds []story.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// validate's host.describe check: an op the plugin does not list, and a
// literal with: that breaks the op's args_schema, are errors at the
// invoke; a templated with: and an op without args_schema are not checked.
func TestCheckAgainstDescribe(t *testing.T) {
	st := loadDescribe(t, "serve")
	errs, warns := Check(context.Background(), st, Options{Logger: slog.New(slog.DiscardHandler)})
	got := diagStrings(errs)
	want := []string{
		`app.yaml:16:17: states.start.on_enter[0].bind.link: bind reads "urll", which host.tickets.create does not return by its result_schema (it returns: id, request, token_seen)`,
		`app.yaml:21:17: states.start.on_enter[2].invoke: invoke "host.tickets.creat": host plugin host.tickets has no op "creat" (its ops: "close", "create") (did you mean "create"?)`,
		`app.yaml:27:23: states.start.on.go[0].effects[0].with: invoke "host.tickets.create": with: does not match the args_schema host plugin host.tickets describes for op "create": ` +
			`/: additionalProperties: additional properties 'extra' not allowed; /: required: missing property 'title'; /priority: type: got string, want integer`,
		`app.yaml:38:21: states.done.on_enter[0].on_complete[0].invoke: invoke "host.tickets.clse": host plugin host.tickets has no op "clse" (its ops: "close", "create") (did you mean "close"?)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
	wantWarns := []string{
		`app.yaml:29:23: states.start.on.go[0].effects[1].bind.was: bind reads "close", which host.tickets.close does not return by its result_schema (did you mean "closed"?) (it returns: closed); it may bind nothing`,
	}
	if d := cmp.Diff(wantWarns, diagStrings(warns)); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// A plugin without host.describe (method not found) is not checked; one
// that cannot answer it is an error at its declaration.
func TestCheckWithoutDescribe(t *testing.T) {
	if ds, _ := Check(context.Background(), loadDescribe(t, "no-describe"), Options{}); len(ds) != 0 {
		t.Errorf("a plugin without host.describe was checked: %v", diagStrings(ds))
	}
	errs, _ := Check(context.Background(), loadDescribe(t, "crash"), Options{})
	got := diagStrings(errs)
	want := []string{`app.yaml:7:3: host_plugins.host.tickets: host.describe failed: host plugin host.tickets: plugin_crash: read response: EOF (plugin closed stdout); plugin exit status 3; stderr tail: "tickets: exploding\n"`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}

// List (kitsoki hosts --story) gives each plugin's described ops sorted by
// name, says when a plugin does not answer host.describe, and gives the
// declaration's diagnostic when it cannot be described.
func TestList(t *testing.T) {
	opsOf := func(ls []Listing) []string {
		var out []string
		for _, op := range ls[0].Ops {
			out = append(out, op.Name+": "+op.Description+" "+string(op.ArgsSchema))
		}
		return out
	}
	ls := List(context.Background(), loadDescribe(t, "serve"), Options{})
	if len(ls) != 1 || ls[0].Decl.Name != "host.tickets" || !ls[0].Described || ls[0].Err != nil {
		t.Fatalf("serve: %+v", ls)
	}
	want := []string{
		"close: Close a ticket. ",
		"create: Open a ticket. " + string(ticketOps["create"].ArgsSchema),
	}
	if d := cmp.Diff(want, opsOf(ls)); d != "" {
		t.Errorf("ops (-want +got):\n%s", d)
	}
	ls = List(context.Background(), loadDescribe(t, "no-describe"), Options{})
	if len(ls) != 1 || ls[0].Described || ls[0].Err != nil || len(ls[0].Ops) != 0 {
		t.Errorf("no-describe: %+v", ls)
	}
	ls = List(context.Background(), loadDescribe(t, "crash"), Options{})
	wantErr := `app.yaml:7:3: host_plugins.host.tickets: host.describe failed: host plugin host.tickets: plugin_crash: read response: EOF (plugin closed stdout); plugin exit status 3; stderr tail: "tickets: exploding\n"`
	if len(ls) != 1 || ls[0].Err == nil || ls[0].Err.String() != wantErr || ls[0].Described {
		t.Errorf("crash: %+v, want the error %s", ls, wantErr)
	}
}
