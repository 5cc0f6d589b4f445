package starlark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// Record modes of an HTTP cassette (as VCR.py names them).
const (
	ModeNone        = "none"         // replay only; a miss is an error
	ModeOnce        = "once"         // record when the cassette starts empty, else replay only
	ModeNewEpisodes = "new_episodes" // replay matches, record misses
	ModeAll         = "all"          // never replay, record everything anew
)

// recordModes lists the modes, for messages.
var recordModes = []string{ModeNone, ModeOnce, ModeNewEpisodes, ModeAll}

// matchFields are the request fields match_on may name.
var matchFields = []string{"method", "url", "uri", "scheme", "host", "port", "path", "query", "body", "headers"}

// Redacted replaces a filtered header or query value when a cassette is
// written.
const Redacted = "REDACTED"

// alwaysFiltered are the headers never written to a cassette.
var alwaysFiltered = []string{"Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization"}

// HTTPRequest is a request as a cassette holds it.
type HTTPRequest struct {
	Method  string            `yaml:"method"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers,omitempty"`
	Body    string            `yaml:"body,omitempty"`
}

// HTTPResponse is a response as a cassette holds it.
type HTTPResponse struct {
	Status  int               `yaml:"status"`
	Headers map[string]string `yaml:"headers,omitempty"`
	Body    string            `yaml:"body"`
}

// Exchange is one cassette entry: a recorded request (Request) or a
// hand-written selector (Match), and the response served for it.
type Exchange struct {
	Request  *HTTPRequest `yaml:"request,omitempty"`
	Match    *Selector    `yaml:"match,omitempty"`
	Response HTTPResponse `yaml:"response"`
	Replay   string       `yaml:"replay,omitempty"` // "any": never consumed

	pattern *regexp.Regexp
	used    bool
}

// Selector is a hand-written match: method (case-insensitive), and url
// (exact) or url_pattern (a Go regexp).
type Selector struct {
	Method     string `yaml:"method,omitempty"`
	URL        string `yaml:"url,omitempty"`
	URLPattern string `yaml:"url_pattern,omitempty"`
}

// Cassette is an HTTP cassette: the exchanges a script's ctx.http calls
// are served from, and, in a recording mode, the file they are recorded
// into. It is safe for concurrent use.
type Cassette struct {
	path string

	mu           sync.Mutex
	mode         string
	matchOn      []string
	filterH      []string
	filterQ      []string
	filterP      []string // filter_post_data_parameters: body fields redacted on write
	ignoreHosts  []string // requests to these hosts go to the live client, never replayed or recorded
	ignoreLocal  bool     // ignore_localhost: localhost, 127.0.0.1 and [::1] likewise
	repeats      bool
	exchanges    []*Exchange
	recorded     bool // something new to write
	startedEmpty bool
}

// cassetteFile is the YAML form of a cassette.
type cassetteFile struct {
	Kind                  string      `yaml:"kind"`
	RecordMode            string      `yaml:"record_mode,omitempty"`
	MatchOn               []string    `yaml:"match_on,omitempty"`
	FilterHeaders         []string    `yaml:"filter_headers,omitempty"`
	FilterQueryParameters []string    `yaml:"filter_query_parameters,omitempty"`
	FilterPostData        []string    `yaml:"filter_post_data_parameters,omitempty"`
	IgnoreHosts           []string    `yaml:"ignore_hosts,omitempty"`
	IgnoreLocalhost       bool        `yaml:"ignore_localhost,omitempty"`
	AllowPlaybackRepeats  bool        `yaml:"allow_playback_repeats,omitempty"`
	Exchanges             []*Exchange `yaml:"exchanges"`
	// Episodes is the list under its other name (Kitsoki's cassettes
	// write episodes: too); a file gives one of the two.
	Episodes []*Exchange `yaml:"episodes,omitempty"`
}

// CassetteKind is the kind: a cassette file declares.
const CassetteKind = "http_cassette"

// LoadCassette reads the HTTP cassette at path. A file that does not exist
// is an empty cassette when mode records (so a first recording can
// create it) and an error otherwise. mode, when not "", overrides the
// file's record_mode (the --record default or KITSOKI_HTTP_CASSETTE_RECORD).
func LoadCassette(path, mode string) (*Cassette, error) {
	if mode != "" && !slices.Contains(recordModes, mode) {
		return nil, fmt.Errorf("http cassette %s: record mode %q is not one of %s", path, mode, strings.Join(recordModes, ", "))
	}
	c := &Cassette{path: path, mode: ModeNone}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && mode != "" && mode != ModeNone:
		c.mode, c.startedEmpty = mode, true
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("http cassette: %w", err)
	}
	if err := c.parse(data); err != nil {
		return nil, fmt.Errorf("http cassette %s: %w", path, err)
	}
	if mode != "" {
		c.mode = mode
	}
	c.startedEmpty = len(c.exchanges) == 0
	return c, nil
}

func (c *Cassette) parse(data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
		return err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
		return errors.New("expected a mapping with kind: http_cassette and exchanges:")
	}
	if err := knownKeys(doc.Content[0], "", []string{"kind", "record_mode", "match_on", "filter_headers",
		"filter_query_parameters", "filter_post_data_parameters", "ignore_hosts", "ignore_localhost", "allow_playback_repeats", "exchanges", "episodes"}); err != nil {
		return err
	}
	list, err := checkExchangeKeys(doc.Content[0])
	if err != nil {
		return err
	}
	var f cassetteFile
	if err := doc.Decode(&f); err != nil {
		return err
	}
	if f.Episodes != nil {
		f.Exchanges, f.Episodes = f.Episodes, nil
	}
	if f.Kind != CassetteKind {
		return fmt.Errorf("kind: is %q; an HTTP cassette says kind: %s", f.Kind, CassetteKind)
	}
	if f.RecordMode != "" && !slices.Contains(recordModes, f.RecordMode) {
		return fmt.Errorf("record_mode %q is not one of %s", f.RecordMode, strings.Join(recordModes, ", "))
	}
	for _, m := range f.MatchOn {
		if !slices.Contains(matchFields, m) {
			return fmt.Errorf("match_on: %q is not one of %s", m, strings.Join(matchFields, ", "))
		}
	}
	if err := checkExchanges(f.Exchanges, list); err != nil {
		return err
	}
	c.mode = ModeNone
	if f.RecordMode != "" {
		c.mode = f.RecordMode
	}
	c.matchOn = f.MatchOn
	if len(c.matchOn) == 0 {
		c.matchOn = []string{"method", "url"}
	}
	c.filterH, c.filterQ, c.repeats, c.exchanges = f.FilterHeaders, f.FilterQueryParameters, f.AllowPlaybackRepeats, f.Exchanges
	c.filterP, c.ignoreHosts, c.ignoreLocal = f.FilterPostData, f.IgnoreHosts, f.IgnoreLocalhost
	return nil
}

// checkExchangeKeys rejects an unknown key in each exchange and in its
// request:, match: and response:, with its line, before the document is
// decoded (decoding would drop it). It returns the name of the exchange list: episodes:
// (Kitsoki's name) or exchanges:, never both.
func checkExchangeKeys(top *yaml.Node) (string, error) {
	list := "exchanges"
	exs := mapGet(top, "exchanges")
	if ep := mapGet(top, "episodes"); ep != nil {
		if exs != nil {
			return "", fmt.Errorf("line %d: episodes: and exchanges: are the same list; write one", ep.Line)
		}
		exs, list = ep, "episodes"
	}
	if exs != nil && exs.Kind == yaml.SequenceNode {
		for i, e := range exs.Content {
			p := fmt.Sprintf("%s[%d]", list, i)
			if err := knownKeys(e, p, []string{"request", "match", "response", "replay"}); err != nil {
				return "", err
			}
			for _, sub := range []struct {
				key  string
				keys []string
			}{
				{"request", []string{"method", "url", "headers", "body"}},
				{"match", []string{"method", "url", "url_pattern"}},
				{"response", []string{"status", "headers", "body"}},
			} {
				if n := mapGet(e, sub.key); n != nil {
					if err := knownKeys(n, p+"."+sub.key, sub.keys); err != nil {
						return "", err
					}
				}
			}
		}
	}
	return list, nil
}

// checkExchanges checks each decoded exchange: a recorded request or a
// selector (exactly one), a known replay mode, an HTTP status, url or
// url_pattern (not both). A url_pattern is compiled here, once.
func checkExchanges(exchanges []*Exchange, list string) error {
	for i, e := range exchanges {
		p := fmt.Sprintf("%s[%d]", list, i)
		switch {
		case e == nil || (e.Request == nil) == (e.Match == nil):
			return fmt.Errorf("%s: give exactly one of request: (a recorded request) or match: (a selector)", p)
		case e.Replay != "" && e.Replay != "any":
			return fmt.Errorf("%s.replay: %q; the only value is any (serve on every match)", p, e.Replay)
		case e.Response.Status < 100 || e.Response.Status > 599:
			return fmt.Errorf("%s.response.status: %d is not an HTTP status", p, e.Response.Status)
		case e.Match != nil && e.Match.URL != "" && e.Match.URLPattern != "":
			return fmt.Errorf("%s.match: give url or url_pattern, not both", p)
		}
		if e.Match != nil && e.Match.URLPattern != "" {
			re, err := regexp.Compile(e.Match.URLPattern)
			if err != nil {
				return fmt.Errorf("%s.match.url_pattern: %w", p, err)
			}
			e.pattern = re
		}
	}
	return nil
}

// matchesSelector matches a request against a match: selector: the method
// (any case) and the exact url or the url_pattern, each when given.
func (e *Exchange) matchesSelector(req *HTTPRequest) bool {
	s := e.Match
	if s.Method != "" && !strings.EqualFold(s.Method, req.Method) {
		return false
	}
	if s.URL != "" && s.URL != req.URL {
		return false
	}
	return e.pattern == nil || e.pattern.MatchString(req.URL)
}

// urlPartMatches compares one part of a recorded URL (ru) with the
// request's (qu), for a match_on: field that names a part. The query is
// compared after the cassette's filters; an unknown field matches.
func (c *Cassette) urlPartMatches(f string, ru, qu *url.URL) bool {
	switch f {
	case "scheme":
		return ru.Scheme == qu.Scheme
	case "host":
		return ru.Hostname() == qu.Hostname()
	case "port":
		return ru.Port() == qu.Port()
	case "path":
		return ru.Path == qu.Path
	case "query":
		return c.filterQuery(qu.Query()).Encode() == ru.Query().Encode()
	}
	return true
}

func mapGet(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func knownKeys(n *yaml.Node, path string, keys []string) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(keys, k.Value) {
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			return fmt.Errorf("line %d: %s: unknown key%s (known: %s)", k.Line, p, closest(k.Value, keys), strings.Join(keys, ", "))
		}
	}
	return nil
}

// Mode is the cassette's effective record mode.
func (c *Cassette) Mode() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mode
}

// replays says whether a request may be served from the cassette, and
// records whether a miss may be recorded.
func (c *Cassette) replays() bool { return c.mode != ModeAll }
func (c *Cassette) records() bool {
	switch c.mode {
	case ModeNewEpisodes, ModeAll:
		return true
	case ModeOnce:
		return c.startedEmpty
	}
	return false
}

// Recording reports whether the cassette may record (and so reach the
// network).
func (c *Cassette) Recording() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records()
}

// find returns the first unconsumed exchange matching req.
func (c *Cassette) find(req *HTTPRequest) *Exchange {
	for _, e := range c.exchanges {
		if e.used && e.Replay != "any" && !c.repeats {
			continue
		}
		if c.matches(e, req) {
			return e
		}
	}
	return nil
}

func (c *Cassette) matches(e *Exchange, req *HTTPRequest) bool {
	if e.Match != nil {
		return e.matchesSelector(req)
	}
	rec := e.Request
	ru, err1 := url.Parse(rec.URL)
	qu, err2 := url.Parse(req.URL)
	for _, f := range c.matchOn {
		switch f {
		case "method":
			if !strings.EqualFold(rec.Method, req.Method) {
				return false
			}
		case "url", "uri":
			if rec.URL != req.URL && (err1 != nil || err2 != nil || ru.String() != c.filterURL(qu).String()) {
				return false
			}
		case "body":
			if rec.Body != req.Body {
				return false
			}
		case "headers":
			for k, v := range rec.Headers {
				got := headerGet(req.Headers, k)
				if v != Redacted && got != v {
					return false
				}
			}
		default:
			if err1 != nil || err2 != nil || !c.urlPartMatches(f, ru, qu) {
				return false
			}
		}
	}
	return true
}

func headerGet(h map[string]string, k string) string {
	for hk, v := range h {
		if strings.EqualFold(hk, k) {
			return v
		}
	}
	return ""
}

// selectors lists what the cassette can still serve, for a miss's message.
func (c *Cassette) selectors() string {
	var out []string
	for _, e := range c.exchanges {
		if e.used && e.Replay != "any" && !c.repeats {
			continue
		}
		switch {
		case e.Match != nil && e.Match.URLPattern != "":
			out = append(out, strings.TrimSpace(strings.ToUpper(e.Match.Method)+" ~"+e.Match.URLPattern))
		case e.Match != nil:
			out = append(out, strings.TrimSpace(strings.ToUpper(e.Match.Method)+" "+e.Match.URL))
		default:
			out = append(out, strings.ToUpper(e.Request.Method)+" "+e.Request.URL)
		}
	}
	if len(out) == 0 {
		return "none left"
	}
	return strings.Join(out, ", ")
}

func (c *Cassette) filterQuery(q url.Values) url.Values {
	for _, k := range c.filterQ {
		if _, ok := q[k]; ok {
			q.Set(k, Redacted)
		}
	}
	return q
}

func (c *Cassette) filterURL(u *url.URL) *url.URL {
	if len(c.filterQ) == 0 {
		return u
	}
	cp := *u
	q := cp.Query()
	changed := false
	for _, k := range c.filterQ {
		if _, ok := q[k]; ok {
			q.Set(k, Redacted)
			changed = true
		}
	}
	if changed {
		cp.RawQuery = q.Encode()
	}
	return &cp
}

// filterHeaders returns h with the always-filtered and filter_headers
// headers redacted and every secret masked.
func (c *Cassette) filterHeaders(h map[string]string, mask *secret.Masker) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range h {
		if slices.ContainsFunc(alwaysFiltered, func(f string) bool { return strings.EqualFold(f, k) }) ||
			slices.ContainsFunc(c.filterH, func(f string) bool { return strings.EqualFold(f, k) }) {
			v = Redacted
		}
		out[k] = mask.Text(v)
	}
	return out
}

// Save writes the cassette back when it recorded anything: secrets are
// redacted (always-filtered headers, filter_* entries, the story's
// ${VAR} values) in the file only. The write is atomic (a temporary file
// renamed over the old one).
func (c *Cassette) Save(mask *secret.Masker) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.recorded {
		return nil
	}
	f := cassetteFile{Kind: CassetteKind, FilterHeaders: c.filterH, FilterQueryParameters: c.filterQ, AllowPlaybackRepeats: c.repeats,
		FilterPostData: c.filterP, IgnoreHosts: c.ignoreHosts, IgnoreLocalhost: c.ignoreLocal}
	if c.mode != ModeNone {
		f.RecordMode = c.mode
	}
	if !slices.Equal(c.matchOn, []string{"method", "url"}) {
		f.MatchOn = c.matchOn
	}
	for _, e := range c.exchanges {
		out := &Exchange{Match: e.Match, Replay: e.Replay}
		if e.Request != nil {
			r := *e.Request
			if u, err := url.Parse(r.URL); err == nil {
				r.URL = mask.Text(c.filterURL(u).String())
			}
			r.Headers = c.filterHeaders(r.Headers, mask)
			r.Body = mask.Text(c.filterBody(r.Body, r.Headers))
			out.Request = &r
		}
		out.Response = HTTPResponse{Status: e.Response.Status, Headers: c.filterHeaders(e.Response.Headers, mask), Body: mask.Text(e.Response.Body)}
		f.Exchanges = append(f.Exchanges, out)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&f); err != nil {
		return fmt.Errorf("http cassette %s: %w", c.path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("http cassette %s: %w", c.path, err)
	}
	if dir := filepath.Dir(c.path); dir != "" {
		if err := outfile.MkdirAll(dir); err != nil {
			return fmt.Errorf("http cassette %s: %w", c.path, err)
		}
	}
	if err := outfile.WriteFile(c.path, buf.Bytes()); err != nil {
		return fmt.Errorf("http cassette %s: %w", c.path, err)
	}
	c.recorded = false
	return nil
}

// HTTPClient is the one door a script's ctx.http calls go through.
type HTTPClient interface {
	Do(ctx context.Context, req *HTTPRequest) (*HTTPResponse, error)
}

// denyAll is the client of a run with no HTTP cassette.
type denyAll struct{}

func (denyAll) Do(_ context.Context, req *HTTPRequest) (*HTTPResponse, error) {
	return nil, fmt.Errorf("%s %s: HTTP is off: a script reaches the network only through an HTTP cassette "+
		"(kitsoki run --http-cassette FILE, recorded with --record; starlark_http_cassette: in a flow)", req.Method, req.URL)
}

// MaxResponseBody is the largest response body a script is handed.
const MaxResponseBody = 4 << 20

// DefaultHTTPTimeout bounds one live request of a recording.
const DefaultHTTPTimeout = 30 * time.Second

// Client returns the HTTP client that serves requests from c, and, when c
// records, sends misses through live (nil: http.Client with
// DefaultHTTPTimeout) and keeps them.
func (c *Cassette) Client(live *http.Client) HTTPClient {
	if live == nil {
		live = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	return &cassetteClient{c: c, live: live}
}

type cassetteClient struct {
	c    *Cassette
	live *http.Client
}

func (cc *cassetteClient) Do(ctx context.Context, req *HTTPRequest) (*HTTPResponse, error) {
	c := cc.c
	if c.ignored(req.URL) {
		return liveDo(ctx, cc.live, req)
	}
	c.mu.Lock()
	if c.replays() {
		if e := c.find(req); e != nil {
			e.used = true
			resp := e.Response
			c.mu.Unlock()
			return &resp, nil
		}
	}
	records := c.records()
	if !records {
		sel := c.selectors()
		c.mu.Unlock()
		return nil, fmt.Errorf("%s %s: no exchange in the HTTP cassette %s matches (record mode %s; available: %s)",
			req.Method, req.URL, filepath.Base(c.path), c.mode, sel)
	}
	c.mu.Unlock()
	resp, err := liveDo(ctx, cc.live, req)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.mode == ModeAll && !c.recorded {
		c.exchanges = nil // all: discard prior recordings
	}
	r := *req
	c.exchanges = append(c.exchanges, &Exchange{Request: &r, Response: *resp, used: true})
	c.recorded = true
	c.mu.Unlock()
	return resp, nil
}

func liveDo(ctx context.Context, client *http.Client, req *HTTPRequest) (*HTTPResponse, error) {
	var body io.Reader
	if req.Body != "" {
		body = strings.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	res, err := client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the response: %w", req.Method, req.URL, err)
	}
	if len(b) > MaxResponseBody {
		return nil, fmt.Errorf("%s %s: the response body is over %d MiB", req.Method, req.URL, MaxResponseBody>>20)
	}
	out := &HTTPResponse{Status: res.StatusCode, Body: string(b), Headers: map[string]string{}}
	keys := make([]string, 0, len(res.Header))
	for k := range res.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Headers[k] = strings.Join(res.Header.Values(k), ", ")
	}
	return out, nil
}

// closest is ` (did you mean "x"?)` for the key within two edits of k, or
// "".
func closest(k string, keys []string) string {
	if best := nearmiss.Closest(k, keys, 2); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// ignored reports whether a request's host is one the cassette passes
// through (ignore_hosts, ignore_localhost): such requests are neither
// replayed nor recorded.
func (c *Cassette) ignored(rawURL string) bool {
	if len(c.ignoreHosts) == 0 && !c.ignoreLocal {
		return false
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if c.ignoreLocal && (h == "localhost" || h == "127.0.0.1" || h == "::1") {
		return true
	}
	return slices.ContainsFunc(c.ignoreHosts, func(x string) bool { return strings.EqualFold(x, h) })
}

// filterBody redacts the filter_post_data_parameters of a request body
// when it is written: fields of a form body, or top-level keys of a JSON
// object body. Other bodies are written as they are.
func (c *Cassette) filterBody(body string, headers map[string]string) string {
	if len(c.filterP) == 0 || body == "" {
		return body
	}
	var obj map[string]any
	if json.Unmarshal([]byte(body), &obj) == nil {
		changed := false
		for _, k := range c.filterP {
			if _, ok := obj[k]; ok {
				obj[k], changed = Redacted, true
			}
		}
		if !changed {
			return body
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return body
		}
		return string(b)
	}
	if ct := headerGet(headers, "Content-Type"); ct != "" && !strings.Contains(ct, "form") {
		return body
	}
	q, err := url.ParseQuery(body)
	if err != nil {
		return body
	}
	changed := false
	for _, k := range c.filterP {
		if _, ok := q[k]; ok {
			q.Set(k, Redacted)
			changed = true
		}
	}
	if !changed {
		return body
	}
	return q.Encode()
}
