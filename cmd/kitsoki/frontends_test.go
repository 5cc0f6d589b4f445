package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/view/tui"
)

// The plain prompt (--no-tui), a session on the cluster and the terminal
// UI share one command set (issue 30): a misspelt command is refused with
// the same suggestion, never sent to the router; :back returns to the
// previous room in each; :quit leaves with exit 6 (the session is not
// finished), as the end of the input does.
func TestFrontEndsShareTheCommandSet(t *testing.T) {
	const wrold = "kitsoki: unknown command :wrold (did you mean :world?); :help lists the commands"
	input := ":wrold\ngreet name=Ada\n:back\n:quit\n"

	code, out, errs := runInteractive(t, input)
	if code != exitIncomplete || !strings.Contains(errs, wrold+"\n") {
		t.Errorf("prompt: exit %d, stderr:\n%s", code, errs)
	}
	if strings.Contains(errs, "NO_MATCH") || strings.Contains(errs, "agent") {
		t.Errorf("prompt: :wrold reached the router:\n%s", errs)
	}
	if strings.Count(out, "[greeting]") < 1 {
		t.Errorf("prompt: :back did not return to the greeting room:\n%s", out)
	}

	con, f, rout, rerrs := remoteHello(t)
	if code := con.Prompt(context.Background(), driver.NewLines(strings.NewReader(input))); code != exitIncomplete {
		t.Errorf("cluster: exit %d", code)
	}
	if d := cmp.Diff(out, rout.String()); d != "" {
		t.Errorf("cluster stdout (-prompt +cluster):\n%s", d)
	}
	if d := cmp.Diff(errs, rerrs.String()); d != "" {
		t.Errorf("cluster stderr (-prompt +cluster):\n%s", d)
	}
	if n := len(f.reqs); n != 2 || !f.reqs[1].Back {
		t.Errorf("cluster: %d updates %+v, want the greet and one back", n, f.reqs)
	}

	d := tuiHello(t)
	ctx := t.Context()
	d.Start(ctx)
	res := d.Do(ctx, ":wrold")
	if diff := cmp.Diff([]tui.Line{{Err: true, Text: wrold}}, res.Lines); diff != "" || res.Done || res.Fatal {
		t.Errorf("UI :wrold (-want +got):\n%s", diff)
	}
	d.Do(ctx, "greet name=Ada")
	if st := d.Status().State; st != "greeted" {
		t.Fatalf("UI: state %q after greet", st)
	}
	if res := d.Do(ctx, ":back"); !res.View || res.Done || res.Fatal {
		t.Errorf("UI :back = %+v", res)
	}
	if st := d.Status().State; st != "greeting" {
		t.Errorf("UI: state %q after :back, want greeting", st)
	}
}

// tuiHello is the terminal UI's driver of the hello story.
func tuiHello(t *testing.T) *tui.ConsoleDriver {
	t.Helper()
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s"},
		Trace: runtime.Trace{Path: filepath.Join(t.TempDir(), "t.jsonl")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	d := &tui.ConsoleDriver{Console: &driver.Console{D: localDriver(rt), Extra: (*pluginRuntime)(nil), TUIView: true}}
	d.Console.Out, d.Console.Err = d.Writer(false), d.Writer(true)
	return d
}
