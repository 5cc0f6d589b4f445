package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/starlark"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// httpRecordEnv overrides an HTTP cassette's record mode.
const httpRecordEnv = "KITSOKI_HTTP_CASSETTE_RECORD"

// httpCassette is a run's --http-cassette: host.starlark.run's HTTP is
// served from it, and, recording, what it misses is fetched and kept.
type httpCassette struct {
	c    *starlark.Cassette
	mask *secret.Masker
}

// openHTTPCassette loads --http-cassette into cfg. The record mode is
// KITSOKI_HTTP_CASSETTE_RECORD when set, else the file's record_mode;
// with --record, a cassette whose mode is none (or that does not exist
// yet) records new episodes. Without the flag a script has no network.
// Under KITSOKI_CASSETTE_STRICT=1 only mode none is accepted.
func openHTTPCassette(o *runOpts, st *story.Story, cfg *runtime.Config) (*httpCassette, error) {
	if o.httpCassette == "" {
		return nil, nil
	}
	h, err := loadHTTPCassette(o, st, cfg)
	if err != nil {
		return nil, err
	}
	// KITSOKI_CASSETTE_STRICT, as for host cassettes: CI never records.
	if s := strings.TrimSpace(os.Getenv(cassette.EnvStrict)); (s == "1" || strings.EqualFold(s, "true")) && h.c.Mode() != starlark.ModeNone {
		return nil, fmt.Errorf("--http-cassette %s: %s=1 but the HTTP cassette's record mode is %q", o.httpCassette, cassette.EnvStrict, h.c.Mode())
	}
	return h, nil
}

func loadHTTPCassette(o *runOpts, st *story.Story, cfg *runtime.Config) (*httpCassette, error) {
	mode := os.Getenv(httpRecordEnv)
	if mode == "" && o.record != "" {
		c, err := starlark.LoadCassette(o.httpCassette, starlark.ModeNewEpisodes)
		if err != nil {
			return nil, fmt.Errorf("--http-cassette: %w", err)
		}
		if c.Mode() == starlark.ModeNewEpisodes {
			if fc, err := starlark.LoadCassette(o.httpCassette, ""); err == nil && fc.Mode() != starlark.ModeNone {
				c = fc // the file asks for a recording mode of its own
			}
		}
		cfg.Starlark.HTTP = c.Client(nil)
		return &httpCassette{c: c, mask: secret.New(st.Secrets)}, nil
	}
	c, err := starlark.LoadCassette(o.httpCassette, mode)
	if err != nil {
		return nil, fmt.Errorf("--http-cassette: %w (%s, when set, is one of none, once, new_episodes, all)", err, httpRecordEnv)
	}
	cfg.Starlark.HTTP = c.Client(nil)
	return &httpCassette{c: c, mask: secret.New(st.Secrets)}, nil
}

// save writes what the run recorded; a failure is the run's.
func (h *httpCassette) save(stderr io.Writer, err *error) {
	if h == nil {
		return
	}
	if serr := h.c.Save(h.mask); serr != nil {
		fmt.Fprintln(stderr, "error:", serr)
		if *err == nil {
			*err = exitWith(exitFailure, serr)
		}
	}
}
