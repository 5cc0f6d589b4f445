package subprocess

import (
	"context"
	"encoding/json"
)

// CallCancellable is Call for a method whose abandoned calls the plugin is
// told about: when ctx ends before the answer, a $/cancelRequest
// notification naming the call's id follows (as for agent tools). Host
// plugins' host.invoke uses it.
func (a *Agent) CallCancellable(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return a.call(ctx, method, params, true)
}
