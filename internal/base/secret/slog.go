package secret

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns h with every record masked before h sees it: the message
// and each string attribute as Text, attribute keys as Key, and any other
// value by its text form when a secret occurs in it (an error, a struct).
// Attributes added with WithAttrs are masked the same way. Use it where a
// logger is made before the secrets are known and cannot be given a masked
// writer, such as a logger handed to each flow of `kitsoki test flows`.
// With nothing to mask it returns h.
func (m *Masker) Handler(h slog.Handler) slog.Handler {
	if m.Empty() {
		return h
	}
	return &maskHandler{m: m, h: h}
}

type maskHandler struct {
	m *Masker
	h slog.Handler
}

func (mh *maskHandler) Enabled(ctx context.Context, l slog.Level) bool { return mh.h.Enabled(ctx, l) }

func (mh *maskHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, mh.m.Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(mh.attr(a))
		return true
	})
	return mh.h.Handle(ctx, out)
}

func (mh *maskHandler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = mh.attr(a)
	}
	return &maskHandler{m: mh.m, h: mh.h.WithAttrs(masked)}
}

func (mh *maskHandler) WithGroup(name string) slog.Handler {
	return &maskHandler{m: mh.m, h: mh.h.WithGroup(mh.m.Key(name))}
}

func (mh *maskHandler) attr(a slog.Attr) slog.Attr {
	key := mh.m.Key(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(key, mh.m.Text(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]slog.Attr, len(as))
		for i, g := range as {
			out[i] = mh.attr(g)
		}
		return slog.Attr{Key: key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		if s := fmt.Sprint(v.Any()); mh.m.MayOccur([]byte(s)) {
			return slog.String(key, mh.m.Text(s))
		}
	}
	return slog.Attr{Key: key, Value: v}
}
