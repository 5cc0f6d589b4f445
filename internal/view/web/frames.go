package web

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/bidi"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/view/viz"
)

// The server-sent events a session page reads:
//
//	entries  {from, reset, entries}: transcript entries from index from
//	         on (reset: drop what the page has first); the event id is
//	         gen:count, so a page that reconnects gets what it missed.
//	status   where the session stands (statusJSON).
//	calls    what runs now: {busy, age_ms, stopping, calls}.

// sseFrame is one event: its data is one line of JSON (encoding/json
// writes no raw line break), with bidi controls shown as marks.
func sseFrame(event, id string, data []byte) []byte {
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + event + "\ndata: ")
	b.WriteString(bidi.Reveal(string(data)))
	b.WriteString("\n\n")
	return b.Bytes()
}

// parseEventID reads a gen:count event id.
func parseEventID(id string) (gen string, n int, ok bool) {
	g, c, found := strings.Cut(id, ":")
	if !found {
		return "", 0, false
	}
	n, err := strconv.Atoi(c)
	return g, n, err == nil && n >= 0
}

func marshal(v any) []byte {
	b, err := json.Marshal(v) // escapes <, > and &
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

func (l *live) entriesFrame(from int, reset bool) []byte {
	from = min(from, len(l.entries))
	data := marshal(struct {
		From    int     `json:"from"`
		Reset   bool    `json:"reset,omitempty"`
		Entries []Entry `json:"entries"`
	}{from, reset, append([]Entry{}, l.entries[from:]...)})
	return sseFrame("entries", l.gen+":"+strconv.Itoa(len(l.entries)), data)
}

// callsJSON is what runs now.
type callsJSON struct {
	Busy     string     `json:"busy,omitempty"`
	AgeMS    int64      `json:"age_ms,omitempty"`
	Stopping bool       `json:"stopping,omitempty"`
	Calls    []callJSON `json:"calls"`
}

type callJSON struct {
	Call
	AgeMS int64 `json:"age_ms"`
}

func (l *live) callsFrame() []byte {
	now := time.Now()
	c := callsJSON{Busy: l.busy, Stopping: l.stopping, Calls: []callJSON{}}
	if l.busy != "" {
		c.AgeMS = now.Sub(l.since).Milliseconds()
	}
	for _, x := range l.calls {
		c.Calls = append(c.Calls, callJSON{Call: x.Call, AgeMS: now.Sub(x.start).Milliseconds()})
	}
	return sseFrame("calls", "", marshal(c))
}

// statusJSON is where a session stands, as its page shows it.
type statusJSON struct {
	ID          string         `json:"id"`
	Story       storyRef       `json:"story"`
	State       string         `json:"state"`
	Description string         `json:"description,omitempty"`
	Turn        int64          `json:"turn"`
	Done        bool           `json:"done"`
	Exit        string         `json:"exit,omitempty"`
	ReadOnly    string         `json:"read_only,omitempty"`
	Failed      string         `json:"failed,omitempty"`
	View        []viewElement  `json:"view"`
	ViewError   string         `json:"view_error,omitempty"`
	Intents     []IntentInfo   `json:"intents"`
	World       map[string]any `json:"world"`
	WorldKeys   []worldKey     `json:"world_keys"`
	Pending     map[string]any `json:"pending_world,omitempty"`
	Debug       bool           `json:"debug"`
	States      []stateRow     `json:"states"`
	Diagram     int            `json:"diagram"` // the SVG's version; 0: no renderer
	Evals       []evalInfo     `json:"evals"`
	ForkedFrom  string         `json:"forked_from,omitempty"`
	ForkedAt    int64          `json:"forked_at,omitempty"`
}

type storyRef struct {
	Key   string `json:"key"`
	Title string `json:"title"`
	AppID string `json:"app_id,omitempty"`
	File  string `json:"file"`
}

// worldKey is a declared world key, for the world editor.
type worldKey struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
}

// stateRow is one state of the story's graph, in drawing order.
type stateRow struct {
	ID      string `json:"id"`
	Label   string `json:"label"`
	Depth   int    `json:"depth"`
	Current bool   `json:"current,omitempty"`
	Visited bool   `json:"visited,omitempty"`
}

func (l *live) statusFrame() []byte {
	s := statusJSON{ID: l.id, Story: storyRef{Key: l.story.Key, Title: l.story.Title, AppID: l.story.AppID, File: l.story.File},
		ReadOnly: l.readOnly, Failed: l.failed, Debug: l.srv.cfg.Debug, View: []viewElement{}, Intents: []IntentInfo{},
		World: map[string]any{}, WorldKeys: []worldKey{}, States: []stateRow{}, Evals: l.story.Evals,
		ForkedFrom: l.meta.ForkedFrom, ForkedAt: l.meta.ForkedAt}
	if s.Evals == nil {
		s.Evals = []evalInfo{}
	}
	if st := l.last; st != nil {
		s.State, s.Description, s.Turn, s.Done, s.Exit = st.State, l.mask.Text(st.Description), st.Turn, st.Done, st.Exit
		s.View = viewElements(st.ViewDoc, l.mask)
		for i, e := range st.ViewDoc {
			if e.Media != nil {
				s.View[i].Media.Src = l.mediaSrc(i, e.Media.Kind, e.Media.Path)
			}
		}
		if st.ViewErr != nil {
			s.ViewError = l.mask.Text(st.ViewErr.Error())
		}
		s.Intents = pageIntents(st.Intents)
		if w, ok := l.mask.Value(orchestrator.DeepCopy(st.World)).(map[string]any); ok {
			s.World = w
		}
	}
	if l.pending != nil {
		s.Pending, _ = l.mask.Value(orchestrator.DeepCopy(l.pending)).(map[string]any)
	}
	if g := l.srv.storyOf(l.story); g != nil {
		for _, v := range g.World {
			s.WorldKeys = append(s.WorldKeys, worldKey{Name: v.Name, Type: v.Type, Description: v.Description})
		}
	}
	if l.graph != nil {
		l.graph.Walk(func(n *viz.Node, depth int) {
			if n.Dynamic {
				return
			}
			s.States = append(s.States, stateRow{ID: n.ID, Label: n.Label, Depth: depth, Current: n.Current, Visited: n.Visited})
		})
		if l.srv.cfg.Render != nil {
			s.Diagram = l.version
		}
	}
	return sseFrame("status", "", marshal(s))
}
