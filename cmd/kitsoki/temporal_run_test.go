package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/driver/remote"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// fakeCluster answers the driver as the session workflow does, from a
// session in this process: the validator's check, then the turn.
type fakeCluster struct {
	sess   *orchestrator.Session
	reqs   []cluster.IntentRequest
	audits []cluster.Audit // the audit updates
}

func (f *fakeCluster) Intent(ctx context.Context, _ string, req cluster.IntentRequest) (*cluster.TurnResult, error) {
	f.reqs = append(f.reqs, req)
	if req.Back {
		out, err := f.sess.Back(ctx)
		if err != nil {
			return nil, err
		}
		return cluster.NewTurnResult(out, f.sess.TurnNumber()), nil
	}
	if req.Intent == "" {
		out, err := f.sess.Say(ctx, req.Input)
		if err != nil {
			return nil, err
		}
		return cluster.NewTurnResult(out, f.sess.TurnNumber()), nil
	}
	if rej := f.sess.Check(req.Intent, req.Slots.Map()); rej != nil {
		return nil, &cluster.RejectedError{Rejection: rej}
	}
	out, err := f.sess.Turn(ctx, req.Intent, req.Slots.Map(), req.Input)
	if err != nil {
		return nil, err
	}
	return cluster.NewTurnResult(out, f.sess.TurnNumber()), nil
}

func (f *fakeCluster) Status(context.Context, string) (*cluster.SessionStatus, error) {
	done, exit := f.sess.Done()
	return &cluster.SessionStatus{Started: true, State: f.sess.State(), Turn: f.sess.TurnNumber(), Done: done, Exit: exit,
		World: cluster.Value{V: orchestrator.DeepCopy(f.sess.World())}, Allowed: f.sess.AllowedIntents()}, nil
}

func (f *fakeCluster) TraceJSONL(context.Context, string) ([]byte, error) { return nil, nil }

func (f *fakeCluster) Audit(_ context.Context, _ string, a cluster.Audit) error {
	f.audits = append(f.audits, a)
	return nil
}

// remoteHello starts the hello story behind a fake cluster and returns a
// console of it, its turn 0 already printed.
func remoteHello(t *testing.T) (*driver.Console, *fakeCluster, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	start, err := rt.Session().Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCluster{sess: rt.Session()}
	var out, errb bytes.Buffer
	status, err := f.Status(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	d := remote.New(f, "s", st, status)
	t.Cleanup(func() { d.Close() })
	con := &driver.Console{D: d, Out: &out, Err: &errb, Extra: clusterCommands{}, QuitHelp: "leave (the session goes on on the cluster)"}
	con.Report(cluster.NewTurnResult(start, 0).Orchestrator())
	return con, f, &out, &errb
}

// TestRemotePromptMatchesLocal: the prompt of a session on the cluster
// prints what the local prompt prints for the same lines.
func TestRemotePromptMatchesLocal(t *testing.T) {
	input := "greet name=Ada style=formal\n:world\n:intents\nbye\n"
	wantCode, wantOut, wantErr := runInteractive(t, input)
	d, _, out, errb := remoteHello(t)
	code := d.Prompt(context.Background(), driver.NewLines(strings.NewReader(input)))
	if code != wantCode || code != exitOK {
		t.Errorf("exit %d, local %d", code, wantCode)
	}
	if d := cmp.Diff(wantOut, out.String()); d != "" {
		t.Errorf("stdout (-local +cluster):\n%s", d)
	}
	if d := cmp.Diff(wantErr, errb.String()); d != "" {
		t.Errorf("stderr (-local +cluster):\n%s", d)
	}
}

// TestRemotePromptBackMatchesLocal: :back on the prompt of a session on
// the cluster is a back update: with no room to return to it prints the
// local refusal and takes no turn; after a transition it returns to the
// room as a local :back does.
func TestRemotePromptBackMatchesLocal(t *testing.T) {
	input := ":back\ngreet name=Ada style=formal\n:back\n:state\n"
	wantCode, wantOut, wantErr := runInteractive(t, input)
	if !strings.Contains(wantErr, orchestrator.ErrNoHistory.Error()) {
		t.Fatalf("the local run did not refuse the first :back:\n%s", wantErr)
	}
	d, f, out, errb := remoteHello(t)
	code := d.Prompt(context.Background(), driver.NewLines(strings.NewReader(input)))
	if code != wantCode {
		t.Errorf("exit %d, local %d", code, wantCode)
	}
	if d := cmp.Diff(wantOut, out.String()); d != "" {
		t.Errorf("stdout (-local +cluster):\n%s", d)
	}
	if d := cmp.Diff(wantErr, errb.String()); d != "" {
		t.Errorf("stderr (-local +cluster):\n%s", d)
	}
	backs := 0
	for _, r := range f.reqs {
		if r.Back {
			backs++
		}
	}
	if backs != 2 {
		t.Errorf("%d back updates sent, want 2", backs)
	}
}

func TestRemotePromptRefusesLocalCommands(t *testing.T) {
	d, _, _, errb := remoteHello(t)
	code := d.Prompt(context.Background(), driver.NewLines(strings.NewReader(":plugins\n:quit\n")))
	want := "kitsoki: :plugins is not available in a session on the cluster (:help lists the commands)\n"
	if code != exitIncomplete || errb.String() != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, errb.String(), exitIncomplete, want)
	}
}

// localScripted runs the hello story's scripted front end on input, as
// kitsoki run does without --temporal.
func localScripted(t *testing.T, input string) (int, string, string) {
	t.Helper()
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var out, errb bytes.Buffer
	con := &driver.Console{D: localDriver(rt), Out: &out, Err: &errb}
	start, err := rt.Session().Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	con.Report(start)
	code := con.Script(context.Background(), strings.NewReader(input))
	return code, out.String(), errb.String()
}

// TestRemoteScriptedMatchesLocal: a typed line goes as intent, typed
// slots and the line as input, free text as input alone; what is printed
// and the exit code are the local run's (a rejection, exit 3; a free-text
// line the router cannot route here, exit 4).
func TestRemoteScriptedMatchesLocal(t *testing.T) {
	for _, tc := range []struct {
		input string
		code  int
		reqs  []cluster.IntentRequest
	}{
		{"greet name=Ada style=formal\ngreet name=Bob\n", exitRejected, []cluster.IntentRequest{
			{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada", "style": "formal"}}, Input: "greet name=Ada style=formal"},
			{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Bob"}}, Input: "greet name=Bob"},
		}},
		{"dance\n", exitAgent, []cluster.IntentRequest{{Input: "dance"}}}, // an unknown single word is free text
		{"greet name=Ada\n", exitIncomplete, []cluster.IntentRequest{{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada"}}, Input: "greet name=Ada"}}},
		{"greet name=Ada\nbye\n", exitOK, []cluster.IntentRequest{{Intent: "greet", Slots: cluster.Value{V: map[string]any{"name": "Ada"}}, Input: "greet name=Ada"}, {Intent: "bye", Slots: cluster.Value{V: map[string]any{}}, Input: "bye"}}},
	} {
		wantCode, wantOut, wantErr := localScripted(t, tc.input)
		d, f, out, errb := remoteHello(t)
		code := d.Script(context.Background(), strings.NewReader(tc.input))
		if code != tc.code || wantCode != tc.code {
			t.Errorf("%q: exit %d, local %d, want %d\nstderr:\n%s", tc.input, code, wantCode, tc.code, errb.String())
		}
		if diff := cmp.Diff(tc.reqs, f.reqs); diff != "" {
			t.Errorf("%q: requests (-want +got):\n%s", tc.input, diff)
		}
		if diff := cmp.Diff(wantOut, out.String()); diff != "" {
			t.Errorf("%q: stdout (-local +cluster):\n%s", tc.input, diff)
		}
		if diff := cmp.Diff(wantErr, errb.String()); diff != "" {
			t.Errorf("%q: stderr (-local +cluster):\n%s", tc.input, diff)
		}
	}
}

// TestRemotePromptUnknownCommandMatchesLocal: an unknown :word on the
// prompt of a session on the cluster is refused with the closest command,
// as locally, and :quit exits 6 in both.
func TestRemotePromptUnknownCommandMatchesLocal(t *testing.T) {
	input := ":wrold\n:quit\n"
	wantCode, wantOut, wantErr := runInteractive(t, input)
	if !strings.Contains(wantErr, "kitsoki: unknown command :wrold (did you mean :world?); :help lists the commands") || wantCode != exitIncomplete {
		t.Fatalf("the local run: exit %d, stderr:\n%s", wantCode, wantErr)
	}
	d, _, out, errb := remoteHello(t)
	code := d.Prompt(context.Background(), driver.NewLines(strings.NewReader(input)))
	if code != wantCode {
		t.Errorf("exit %d, local %d", code, wantCode)
	}
	if d := cmp.Diff(wantOut, out.String()); d != "" {
		t.Errorf("stdout (-local +cluster):\n%s", d)
	}
	if d := cmp.Diff(wantErr, errb.String()); d != "" {
		t.Errorf("stderr (-local +cluster):\n%s", d)
	}
}

// TestClusterAuditKindIsTheLocalOne keeps a cluster session's record of
// an MCP call the same event a local session writes.
func TestClusterAuditKindIsTheLocalOne(t *testing.T) {
	if cluster.KindAPICall != driver.KindAPICall {
		t.Errorf("cluster.KindAPICall %q, driver.KindAPICall %q", cluster.KindAPICall, driver.KindAPICall)
	}
}

// TestTakeAuditedCarriesTheRecord: an input's record travels in its
// intent update; an input refused before a turn (by the validator, or a
// line that does not parse) sends it in an audit update instead.
func TestTakeAuditedCarriesTheRecord(t *testing.T) {
	con, f, _, _ := remoteHello(t)
	d := con.D.(*remote.Driver)
	a := &cluster.Audit{Surface: "mcp", Tool: "session_submit_kitsoki", Client: "stdio"}
	steps := []struct {
		in                 driver.Input
		outcome            string
		inUpdate, onItsOwn int
	}{
		{driver.Intent("greet", map[string]any{"name": "Ada"}), orchestrator.OutcomeTransitioned, 1, 0},
		{driver.Intent("greet", map[string]any{"name": "Bob"}), orchestrator.OutcomeRejected, 2, 1},
		{driver.Line("greet name=Bob style=nope extra"), "", 2, 2},
	}
	for i, s := range steps {
		out, err := d.TakeAudited(t.Context(), s.in, a)
		if s.outcome == "" {
			if err == nil {
				t.Errorf("step %d: no error for %+v", i, s.in)
			}
		} else if err != nil || out.Outcome != s.outcome {
			t.Fatalf("step %d: %+v %v, want %s", i, out, err, s.outcome)
		}
		carried := 0
		for _, r := range f.reqs {
			if r.Audit != nil && *r.Audit == *a {
				carried++
			}
		}
		if carried != s.inUpdate || len(f.audits) != s.onItsOwn {
			t.Errorf("step %d: %d records in intent updates, %d on their own; want %d, %d", i, carried, len(f.audits), s.inUpdate, s.onItsOwn)
		}
	}
	if _, err := d.TakeAudited(t.Context(), driver.Intent("bye", nil), nil); err != nil || f.reqs[len(f.reqs)-1].Audit != nil {
		t.Errorf("no record: %v, %+v", err, f.reqs[len(f.reqs)-1])
	}
}
