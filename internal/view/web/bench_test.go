package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var tickApp = mustAbs("testdata/tick/app.yaml")

// page follows one session's event stream as a page does and tells when
// each turn's update has arrived: the frame that carries the turn's status
// and its calls (none in flight).
type page struct {
	id      string
	updates chan pageUpdate
}

type pageUpdate struct {
	turn int64
	at   time.Time
}

// openPage opens the session's event stream; its reader ends when the
// server closes the stream.
func openPage(b *testing.B, ts *testServer, id string) *page {
	b.Helper()
	req, _ := http.NewRequestWithContext(b.Context(), "GET", ts.URL+"/api/sessions/"+id+"/events", nil)
	req.Header.Set(TokenHeader, ts.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		b.Fatalf("events of %s: %d", id, resp.StatusCode)
	}
	p := &page{id: id, updates: make(chan pageUpdate, 1024)}
	go func() {
		defer resp.Body.Close()
		defer close(p.updates)
		rd := bufio.NewReader(resp.Body)
		name, turn := "", int64(-1)
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				return
			}
			line = bytes.TrimSuffix(line, []byte("\n"))
			switch {
			case bytes.HasPrefix(line, []byte("event: ")):
				name = string(line[len("event: "):])
			case bytes.HasPrefix(line, []byte("data: ")) && name == "status":
				var s struct {
					Turn int64 `json:"turn"`
				}
				_ = json.Unmarshal(line[len("data: "):], &s)
				turn = s.Turn
			case bytes.HasPrefix(line, []byte("data: ")) && name == "calls":
				var c struct {
					Busy string `json:"busy"`
				}
				_ = json.Unmarshal(line[len("data: "):], &c)
				if c.Busy == "" && turn >= 0 {
					p.updates <- pageUpdate{turn: turn, at: time.Now()}
				}
			}
		}
	}()
	return p
}

// until waits for the update of turn.
func (p *page) until(turn int64) (time.Time, error) {
	for u := range p.updates {
		if u.turn >= turn {
			return u.at, nil
		}
	}
	return time.Time{}, fmt.Errorf("session %s: the event stream ended before turn %d", p.id, turn)
}

// BenchmarkPageUpdate50 is the page update latency with 50 sessions,
// each followed by a page over loopback (the event stream the page reads),
// all taking a turn at once: from the moment a turn's update is handed to
// the pages (Config.TurnDone) to its arrival at the page. One iteration is
// one turn of every session; p50-ms, p95-ms and max-ms are over all of
// them.
func BenchmarkPageUpdate50(b *testing.B) {
	const pages = 50
	var mu sync.Mutex
	done := map[string]time.Time{}
	ts := startServer(b, serverOpts{stories: []string{tickApp}, turnDone: func(id string) {
		mu.Lock()
		done[id] = time.Now()
		mu.Unlock()
	}})
	ps := make([]*page, pages)
	for i := range ps {
		id := ts.create(b, "tick")
		ps[i] = openPage(b, ts, id)
		if _, err := ps[i].until(0); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	var turn int64
	for b.Loop() {
		turn++
		errs := make([]error, pages)
		got := make([]time.Duration, pages)
		var wg sync.WaitGroup
		for i, p := range ps {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", ts.URL+"/api/sessions/"+p.id+"/input", strings.NewReader(`{"intent":"tick"}`))
				req.Header.Set(TokenHeader, ts.Token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					errs[i] = fmt.Errorf("input to %s: %d", p.id, resp.StatusCode)
					return
				}
				at, err := p.until(turn)
				if err != nil {
					errs[i] = err
					return
				}
				mu.Lock()
				got[i] = at.Sub(done[p.id])
				mu.Unlock()
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, got...)
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.95), "p95-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(0, "ns/op")
}
