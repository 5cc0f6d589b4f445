// Command sleepy is the agent of the kill-a-worker test: each call sleeps
// 300 to 800 ms (chosen from a digest of the call, so the same call
// sleeps the same on every run), then answers v, a digest of the
// request's k and n. It appends one line to $SLEEP_LOG when a call starts
// and one when it completes:
//
//	start <session_id> <call_id> agent=<pid> worker=<parent pid>
//	done <session_id> <call_id> agent=<pid> worker=<parent pid>
//
// and puts its pid in the answer's meta, so the trace says which process
// gave the answer the session used.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kitsoki/kitsoki/plugin"
)

func logLine(kind string, req *plugin.AskRequest) {
	f, err := os.OpenFile(os.Getenv("SLEEP_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sleepy:", err)
		return
	}
	defer f.Close()
	// One write of one short line: O_APPEND keeps lines of several
	// processes whole.
	fmt.Fprintf(f, "%s %s %s agent=%d worker=%d\n", kind, req.SessionID, req.CallID, os.Getpid(), os.Getppid())
}

func digest(parts ...any) uint64 {
	sum := sha256.Sum256(fmt.Append(nil, parts...))
	return binary.BigEndian.Uint64(sum[:8])
}

func ask(ctx context.Context, req *plugin.AskRequest) (*plugin.AskResponse, error) {
	logLine("start", req)
	sleep := 300*time.Millisecond + time.Duration(digest(req.SessionID, req.CallID)%500)*time.Millisecond
	select {
	case <-time.After(sleep):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	v := digest(req.With["k"], req.With["n"]) % 1000
	sub, err := json.Marshal(map[string]any{"v": v, "k": req.With["k"], "n": req.With["n"]})
	if err != nil {
		return nil, err
	}
	logLine("done", req)
	return &plugin.AskResponse{Submission: sub, Meta: map[string]any{"pid": os.Getpid()}}, nil
}

func main() {
	if err := plugin.Serve(plugin.AgentFunc(ask)); err != nil {
		fmt.Fprintln(os.Stderr, "sleepy:", err)
		os.Exit(1)
	}
}
