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
// an update has arrived: each calls frame with nothing running (the last
// frame of every update the server sends a page), with the turn of the
// status before it.
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

// until waits for an update of turn (or a later one).
func (p *page) until(turn int64) (time.Time, error) {
	for u := range p.updates {
		if u.turn >= turn {
			return u.at, nil
		}
	}
	return time.Time{}, fmt.Errorf("session %s: the event stream ended before turn %d", p.id, turn)
}

// next waits for the next update.
func (p *page) next() (time.Time, error) {
	u, ok := <-p.updates
	if !ok {
		return time.Time{}, fmt.Errorf("session %s: the event stream ended", p.id)
	}
	return u.at, nil
}

// bench50 is the set-up of the page benchmarks: 50 sessions of the tick
// story, each followed by a page over loopback, each at turn 0.
type bench50 struct {
	ts   *testServer
	ps   []*page
	mu   sync.Mutex
	done map[string]time.Time // when each session's last turn was handed to its page
	turn int64
}

const benchPages = 50

func newBench50(b *testing.B) *bench50 {
	bb := &bench50{done: map[string]time.Time{}}
	bb.ts = startServer(b, serverOpts{stories: []string{tickApp}, turnDone: func(id string) {
		bb.mu.Lock()
		bb.done[id] = time.Now()
		bb.mu.Unlock()
	}})
	bb.ps = make([]*page, benchPages)
	for i := range bb.ps {
		id := bb.ts.create(b, "tick")
		bb.ps[i] = openPage(b, bb.ts, id)
		if _, err := bb.ps[i].until(0); err != nil {
			b.Fatal(err)
		}
	}
	return bb
}

// all runs fn for every page at once and collects what each measured.
func (bb *bench50) all(fn func(p *page) (time.Duration, error)) ([]time.Duration, error) {
	errs := make([]error, len(bb.ps))
	got := make([]time.Duration, len(bb.ps))
	var wg sync.WaitGroup
	for i, p := range bb.ps {
		wg.Go(func() { got[i], errs[i] = fn(p) })
	}
	wg.Wait()
	return got, errors.Join(errs...)
}

// turns has every session take one turn at once; each latency is from
// the moment the turn's update is handed to the pages (Config.TurnDone)
// to its arrival at the page.
func (bb *bench50) turns() ([]time.Duration, error) {
	bb.turn++
	turn := bb.turn
	return bb.all(func(p *page) (time.Duration, error) {
		req, _ := http.NewRequest("POST", bb.ts.URL+"/api/sessions/"+p.id+"/input", strings.NewReader(`{"intent":"tick"}`))
		req.Header.Set(TokenHeader, bb.ts.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return 0, fmt.Errorf("input to %s: %d", p.id, resp.StatusCode)
		}
		at, err := p.until(turn)
		if err != nil {
			return 0, err
		}
		bb.mu.Lock()
		defer bb.mu.Unlock()
		return at.Sub(bb.done[p.id]), nil
	})
}

// noops is the floor: every session's page is sent a no-op update at
// once (the calls frame with nothing running, the last frame of every
// turn's update) through the same stack: the live session's publish, its
// page's queue, the event stream handler, loopback, the page's reader. No
// turn runs and no frame is built but that one.
func (bb *bench50) noops() ([]time.Duration, error) {
	return bb.all(func(p *page) (time.Duration, error) {
		bb.ts.mu.Lock()
		l := bb.ts.lives[p.id]
		bb.ts.mu.Unlock()
		l.mu.Lock()
		start := time.Now()
		l.publish(l.callsFrame())
		l.mu.Unlock()
		at, err := p.next()
		return at.Sub(start), err
	})
}

// quantiles reports p50, p95 and max of lat under prefix.
func quantiles(b *testing.B, prefix string, lat []time.Duration) float64 {
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), prefix+"p50-ms")
	b.ReportMetric(q(0.95), prefix+"p95-ms")
	b.ReportMetric(q(1), prefix+"max-ms")
	return q(0.95)
}

// BenchmarkPageUpdate50 is the page update latency with 50 sessions,
// each followed by a page over loopback (the event stream the page reads),
// all taking a turn at once: from the moment a turn's update is handed to
// the pages (Config.TurnDone) to its arrival at the page (p50-ms, p95-ms,
// max-ms over every turn of every session). Each iteration first runs the
// floor (BenchmarkPageFloor50's no-op update to the same 50 pages), so
// that both are measured under the same load: floor-p95-ms and
// p95-ratio, the update's p95 over the floor's.
func BenchmarkPageUpdate50(b *testing.B) {
	bb := newBench50(b)
	var lat, floor []time.Duration
	for b.Loop() {
		f, err := bb.noops()
		if err != nil {
			b.Fatal(err)
		}
		floor = append(floor, f...)
		got, err := bb.turns()
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, got...)
	}
	b.StopTimer()
	p95 := quantiles(b, "", lat)
	f95 := quantiles(b, "floor-", floor)
	b.ReportMetric(p95/f95, "p95-ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPageFloor50 is the floor alone: a no-op update sent to 50
// pages at once over the server's stack, no turn run (bench50.noops).
func BenchmarkPageFloor50(b *testing.B) {
	bb := newBench50(b)
	var floor []time.Duration
	for b.Loop() {
		f, err := bb.noops()
		if err != nil {
			b.Fatal(err)
		}
		floor = append(floor, f...)
	}
	b.StopTimer()
	quantiles(b, "floor-", floor)
	b.ReportMetric(0, "ns/op")
}
