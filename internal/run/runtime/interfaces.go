package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// InterfaceHandler answers iface.<name>[.<op>] as <handler>[.<op>] through
// h: whatever answers that name there (the real handler, a stub, a
// cassette episode; exactly or by prefix) answers the call, else the
// handler registered as <handler> itself, as Kitsoki's registry falls
// back. The call's args are passed on unchanged.
func InterfaceHandler(h *host.Host, iface, handler string) host.Handler {
	return &ifaceHandler{h: h, iface: iface, handler: handler}
}

type ifaceHandler struct {
	h              *host.Host
	iface, handler string
}

func (ih *ifaceHandler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	op := strings.TrimPrefix(call.Namespace, story.InterfaceNamespace+ih.iface)
	c := *call
	c.Namespace = ih.handler + op
	// <handler>.<op> when something answers that name, else the handler
	// itself (host.run answers iface.shell.exec as host.run.exec).
	hd, ok := ih.h.Handler(c.Namespace)
	if !ok {
		hd, ok = ih.h.Handler(ih.handler)
	}
	var res *host.Result
	var err error
	if ok {
		res, err = hd.Invoke(ctx, &c)
	} else {
		res, err = ih.h.Dispatch(ctx, &c) // the host's "no handler" error
	}
	if err != nil {
		return nil, fmt.Errorf("%s (bound to %s): %w", call.Namespace, ih.handler, err)
	}
	return res, nil
}

// registerInterfaces binds each host interface of the story with a
// default: to that handler.
func registerInterfaces(h *host.Host, st *story.Story) {
	for _, name := range slices.Sorted(maps.Keys(st.Interfaces)) {
		in := st.Interfaces[name]
		if in.Default == "" {
			continue
		}
		hd := InterfaceHandler(h, name, in.Default)
		h.Register(story.InterfaceNamespace+name, hd)
		h.RegisterPrefix(story.InterfaceNamespace+name, hd)
	}
}
