package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/base/version"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/otelexport"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// otlpOpts are run's OpenTelemetry flags.
type otlpOpts struct {
	endpoint string
	content  bool
}

func addOTLPFlags(f *pflag.FlagSet, o *otlpOpts) {
	f.StringVar(&o.endpoint, "otlp", "", "export spans (session, turns, invokes, agent calls) over OTLP/HTTP to this base URL, e.g. http://127.0.0.1:4318 (/v1/traces is added; default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
	f.BoolVar(&o.content, "otlp-content", false, "with --otlp: include prompts, answers and input lines in the spans (masked like the trace)")
}

// otlpExport is an open exporter, or nothing when no endpoint is set.
type otlpExport struct{ exp *otelexport.Exporter }

// open starts the exporter when --otlp or the standard variables name an
// endpoint, and makes cfg's sink feed it.
func (o *otlpOpts) open(ctx context.Context, st *story.Story, session, path string, cfg *runtime.Config, logger *slog.Logger) (*otlpExport, error) {
	if !otelexport.Enabled(o.endpoint, os.Getenv) {
		if o.content {
			return nil, fmt.Errorf("--otlp-content needs an endpoint: give --otlp URL or set %s", otelexport.EnvEndpoint)
		}
		return &otlpExport{}, nil
	}
	exp, err := otelexport.New(ctx, otelexport.Options{
		Endpoint: o.endpoint,
		Content:  o.content,
		Masker:   secret.New(st.Secrets),
		Logger:   logger,
		Session:  otelexport.Session{ID: session, AppID: st.App.ID, StoryPath: path, Version: version.String()},
	})
	if err != nil {
		return nil, err
	}
	if prev := cfg.Trace.Observer; prev != nil { // the terminal UI's: both see every event
		cfg.Trace.Observer = trace.ObserverFunc(func(ev *trace.Event, p trace.Payload) {
			exp.Observe(ev, p)
			prev.Observe(ev, p)
		})
	} else {
		cfg.Trace.Observer = exp
	}
	return &otlpExport{exp: exp}, nil
}

// close flushes the spans; a failed export is shown as a warning (the
// run's own outcome and exit code stay what the story decided).
func (x *otlpExport) close(ctx context.Context, stderr io.Writer) {
	if x == nil || x.exp == nil {
		return
	}
	if err := x.exp.Close(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
}
