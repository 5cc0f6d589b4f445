package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/number"
)

// The corpus form of host.agent.search (Kitsoki's): with.corpus names
// files by glob inside the workspace, they are cut into chunks
// (with.chunk), the chunks are ranked against with.query by the story's
// embedding model (routing.embedding) and the best ones come back as hits.

// Corpus search limits and defaults.
const (
	DefaultSearchTopK  = 10   // hits returned when with.top_k is absent
	DefaultChunkMax    = 1200 // characters in a chunk when with.chunk.max is absent
	maxCorpusFiles     = 2000 // files one search reads
	maxCorpusFileBytes = 1 << 20
)

// chunkModes are the ways a file is cut: heading starts a chunk at every
// Markdown heading (outside code fences) and cuts longer sections at
// paragraphs; file keeps a file whole. Both cut a chunk longer than max.
var chunkModes = []string{"heading", "file"}

// WithCorpusRanker is the story's embedding model (routing.embedding),
// which ranks the chunks of host.agent.search's corpus form. Without it
// the corpus form fails, naming the setting.
func WithCorpusRanker(r Ranker) Option {
	return func(h *Host) {
		h.corpusRanker = r
		h.handlers[SearchNamespace] = HandlerFunc(h.search)
	}
}

// corpusQuery is a corpus search's with: map, read.
type corpusQuery struct {
	query    string
	globs    []string
	topK     int
	minScore float64
	max      int
	mode     string
}

func readCorpusQuery(args map[string]any) (*corpusQuery, error) {
	q := &corpusQuery{topK: DefaultSearchTopK, max: DefaultChunkMax, mode: "heading", minScore: -1}
	q.query, _ = args["query"].(string)
	if strings.TrimSpace(q.query) == "" {
		return nil, errors.New("with.query is required: the text to find passages close to")
	}
	switch c := args["corpus"].(type) {
	case string:
		q.globs = []string{c}
	case []any:
		for i, g := range c {
			s, ok := g.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return nil, fmt.Errorf("with.corpus[%d] must be a glob such as \"docs/**/*.md\", got %v", i, g)
			}
			q.globs = append(q.globs, s)
		}
	default:
		return nil, fmt.Errorf("with.corpus must be a glob or a list of globs relative to the workspace (\"docs/**/*.md\"), got %T", c)
	}
	if len(q.globs) == 0 {
		return nil, errors.New("with.corpus is empty: give at least one glob (\"docs/**/*.md\")")
	}
	if v, ok := args["top_k"]; ok && v != nil {
		n, ok := number.Whole(v)
		if !ok || n < 1 {
			return nil, fmt.Errorf("with.top_k must be a positive integer, got %v", v)
		}
		q.topK = int(n)
	}
	if v, ok := args["min_score"]; ok && v != nil {
		x, ok := number.Float(v)
		if !ok || x < -1 || x > 1 {
			return nil, fmt.Errorf("with.min_score must be a cosine similarity from -1 to 1, got %v", v)
		}
		q.minScore = x
	}
	if err := q.readChunk(args["chunk"]); err != nil {
		return nil, err
	}
	return q, nil
}

func (q *corpusQuery) readChunk(v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("with.chunk must be a mapping {max, mode}, got %T", v)
	}
	for k := range m {
		if k != "max" && k != "mode" {
			return fmt.Errorf("with.chunk: unknown key %q (known: max, mode)", k)
		}
	}
	if x, ok := m["max"]; ok && x != nil {
		n, ok := number.Whole(x)
		if !ok || n < 100 {
			return fmt.Errorf("with.chunk.max must be a whole number of characters, at least 100, got %v", x)
		}
		q.max = int(n)
	}
	if x, ok := m["mode"]; ok && x != nil {
		s, _ := x.(string)
		if !slices.Contains(chunkModes, s) {
			return fmt.Errorf("with.chunk.mode %v: want one of %s", x, strings.Join(chunkModes, ", "))
		}
		q.mode = s
	}
	return nil
}

// chunk is one passage of a corpus file.
type chunk struct {
	path    string // slash path relative to the workspace
	index   int    // its place in the file, from 0
	heading string // the heading it starts under ("" before the first)
	line    int    // its first line, from 1
	text    string
}

// corpusSearch runs the corpus form. Result data: hits (path, chunk_id,
// heading, line, text, score; best first, at least min_score, at most
// top_k), top (the best hit or null), data ({hits, top}, for stories that
// bind data), count, files, chunks, ok, exit_code.
func (h *Host) corpusSearch(ctx context.Context, call *Call) (*Result, error) {
	q, err := readCorpusQuery(call.Args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SearchNamespace, err)
	}
	if h.corpusRanker == nil {
		return nil, fmt.Errorf("%s: no embedding model is configured for this story: set routing.embedding.endpoint (a running embedding server) or routing.embedding.model (a model kitsoki runs), or handle the failure with on_error", SearchNamespace)
	}
	ws := h.story.Workspace
	if ws.IsZero() {
		return nil, fmt.Errorf("%s: no workspace is set for this run, so with.corpus has nothing to search", SearchNamespace)
	}
	files, chunks, err := readCorpus(ws.Dir(), q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SearchNamespace, err)
	}
	hits := []any{}
	if len(chunks) > 0 {
		docs := make([]string, len(chunks))
		for i, c := range chunks {
			docs[i] = c.text
		}
		ranked, err := h.corpusRanker.Rank(ctx, q.query, docs)
		if err != nil {
			ae, ok := agent.AsAskError(err)
			if !ok {
				ae = &agent.AskError{Kind: agent.KindTransportError, Detail: err.Error(), Err: err}
			}
			return &Result{Data: map[string]any{"ok": false, "exit_code": 1, "error": ae.Error()}, Err: ae}, nil
		}
		for _, r := range ranked {
			if len(hits) == q.topK || r.Score < q.minScore {
				break
			}
			c := chunks[r.Index]
			hits = append(hits, map[string]any{"path": c.path, "chunk_id": fmt.Sprintf("%s#%d", c.path, c.index),
				"heading": c.heading, "line": int64(c.line), "text": c.text, "score": r.Score})
		}
	}
	var top any
	if len(hits) > 0 {
		top = hits[0]
	}
	return &Result{Data: map[string]any{"hits": hits, "top": top, "data": map[string]any{"hits": hits, "top": top},
		"count": int64(len(hits)), "files": int64(files), "chunks": int64(len(chunks)), "ok": true, "exit_code": 0}}, nil
}

// readCorpus reads the files the globs match (through a root on the
// workspace: nothing outside it is read, a symlink leading out included)
// and cuts them into chunks, in path order.
func readCorpus(dir string, q *corpusQuery) (int, []chunk, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, nil, fmt.Errorf("open the workspace %s: %w", dir, err)
	}
	defer root.Close()
	fsys := root.FS()
	seen := map[string]bool{}
	var paths []string
	for _, g := range q.globs {
		pat := path.Clean(strings.TrimPrefix(strings.ReplaceAll(g, "\\", "/"), "./"))
		if path.IsAbs(pat) || pat == ".." || strings.HasPrefix(pat, "../") {
			return 0, nil, fmt.Errorf("with.corpus %q must be relative to the workspace and stay inside it", g)
		}
		if !doublestar.ValidatePattern(pat) {
			return 0, nil, fmt.Errorf("with.corpus %q is not a valid glob", g)
		}
		ms, err := doublestar.Glob(fsys, pat, doublestar.WithFilesOnly())
		if err != nil {
			return 0, nil, fmt.Errorf("with.corpus %q: %w", g, err)
		}
		for _, m := range ms {
			if !seen[m] {
				seen[m] = true
				paths = append(paths, m)
			}
		}
	}
	slices.Sort(paths)
	if len(paths) > maxCorpusFiles {
		return 0, nil, fmt.Errorf("with.corpus matches %d files, more than %d: narrow the globs", len(paths), maxCorpusFiles)
	}
	var out []chunk
	for _, p := range paths {
		b, err := readCapped(fsys, p)
		if err != nil {
			return 0, nil, fmt.Errorf("with.corpus: %s: %w", p, err)
		}
		if !utf8.Valid(b) || slices.Contains(b, 0) {
			continue // not text
		}
		out = append(out, cutFile(p, string(b), q)...)
	}
	return len(paths), out, nil
}

func readCapped(fsys fs.FS, name string) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxCorpusFileBytes {
		return nil, fmt.Errorf("%d bytes, over the %d MiB a corpus file may hold", fi.Size(), maxCorpusFileBytes>>20)
	}
	return fs.ReadFile(fsys, name)
}

// section is a run of lines starting at line (from 1).
type section struct {
	heading string
	line    int
	lines   []string
}

// cutFile cuts one file into chunks of at most q.max characters.
func cutFile(p, text string, q *corpusQuery) []chunk {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var secs []section
	if q.mode == "file" {
		secs = []section{{line: 1, lines: lines}}
	} else {
		secs = headingSections(lines)
	}
	var out []chunk
	for _, s := range secs {
		for _, piece := range splitSection(s, q.max) {
			if strings.TrimSpace(piece.text) == "" {
				continue
			}
			out = append(out, chunk{path: p, index: len(out), heading: s.heading, line: piece.line, text: piece.text})
		}
	}
	return out
}

// headingSections starts a section at every ATX heading outside a code
// fence.
func headingSections(lines []string) []section {
	var secs []section
	cur := section{line: 1}
	fence := ""
	for i, ln := range lines {
		t := strings.TrimSpace(ln)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		case isHeading(t):
			if len(cur.lines) > 0 {
				secs = append(secs, cur)
			}
			cur = section{heading: strings.TrimSpace(strings.TrimLeft(t, "#")), line: i + 1}
		}
		cur.lines = append(cur.lines, ln)
	}
	return append(secs, cur)
}

func isHeading(t string) bool {
	n := len(t) - len(strings.TrimLeft(t, "#"))
	return n >= 1 && n <= 6 && (len(t) == n || t[n] == ' ' || t[n] == '\t')
}

type piece struct {
	line int
	text string
}

// splitSection cuts a section into pieces of at most max characters at
// line ends; a single longer line is cut at max.
func splitSection(s section, max int) []piece {
	var out []piece
	var b strings.Builder
	start := s.line
	flush := func(next int) {
		if b.Len() > 0 {
			out = append(out, piece{line: start, text: strings.TrimRight(b.String(), "\n")})
			b.Reset()
		}
		start = next
	}
	for i, ln := range s.lines {
		n := s.line + i
		for utf8.RuneCountInString(ln) > max {
			flush(n)
			cut := cutAt(ln, max)
			out = append(out, piece{line: n, text: ln[:cut]})
			ln = ln[cut:]
		}
		if utf8.RuneCountInString(b.String())+utf8.RuneCountInString(ln)+1 > max {
			flush(n)
		}
		if b.Len() == 0 {
			start = n
		}
		b.WriteString(ln)
		b.WriteByte('\n')
	}
	flush(0)
	return out
}

// cutAt is the byte offset of the max-th rune of s.
func cutAt(s string, max int) int {
	n := 0
	for i := range s {
		if n == max {
			return i
		}
		n++
	}
	return len(s)
}
