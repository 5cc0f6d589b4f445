package starlark

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"go.starlark.net/starlark"
)

func (r *run) httpGet(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var u string
	var headers *starlark.Dict
	if err := starlark.UnpackArgs("ctx.http.get", args, kwargs, "url", &u, "headers?", &headers); err != nil {
		return nil, err
	}
	return r.do("GET", u, headers, nil)
}

func (r *run) httpPost(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var u string
	var headers *starlark.Dict
	var body starlark.Value = starlark.None
	if err := starlark.UnpackArgs("ctx.http.post", args, kwargs, "url", &u, "body?", &body, "headers?", &headers); err != nil {
		return nil, err
	}
	return r.do("POST", u, headers, body)
}

func (r *run) do(method, u string, headers *starlark.Dict, body starlark.Value) (starlark.Value, error) {
	fn := "ctx.http." + strings.ToLower(method)
	req := &HTTPRequest{Method: method, URL: u}
	if headers != nil {
		req.Headers = map[string]string{}
		for _, kv := range headers.Items() {
			k, ok1 := kv[0].(starlark.String)
			v, ok2 := kv[1].(starlark.String)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("%s: headers must map strings to strings, got %s: %s", fn, kv[0].Type(), kv[1].Type())
			}
			req.Headers[string(k)] = string(v)
		}
	}
	switch x := body.(type) {
	case nil, starlark.NoneType:
	case starlark.String:
		req.Body = string(x)
	case *starlark.Dict:
		g, err := toGo(x, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: body: %w", fn, err)
		}
		bs, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("%s: body: %w", fn, err)
		}
		req.Body = string(bs)
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		if headerGet(req.Headers, "Content-Type") == "" {
			req.Headers["Content-Type"] = "application/json"
		}
	default:
		return nil, fmt.Errorf("%s: body must be a string or a dict, got %s", fn, body.Type())
	}
	resp, err := r.h.opts.HTTP.Do(r.ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	if len(resp.Body) > MaxResponseBody {
		return nil, fmt.Errorf("%s %s: the response body is over %d MiB", method, u, MaxResponseBody>>20)
	}
	if err := r.charge(int64(len(resp.Body))+int64(len(resp.Headers))*entrySize, func() string { return fn + "'s response" }); err != nil {
		return nil, err
	}
	r.exchanges = append(r.exchanges, map[string]any{"method": method, "url": u, "status": int64(resp.Status)})
	return newResponse(resp), nil
}

// response is what ctx.http returns: .status, .headers, .text(), .json();
// truthy iff the status is 2xx.
type response struct {
	status  int
	headers *starlark.Dict
	body    string
}

func newResponse(r *HTTPResponse) *response {
	h := starlark.NewDict(len(r.Headers))
	keys := make([]string, 0, len(r.Headers))
	for k := range r.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_ = h.SetKey(starlark.String(k), starlark.String(r.Headers[k]))
	}
	h.Freeze()
	return &response{status: r.Status, headers: h, body: r.Body}
}

func (r *response) String() string        { return fmt.Sprintf("<response %d>", r.status) }
func (r *response) Type() string          { return "response" }
func (r *response) Freeze()               {}
func (r *response) Truth() starlark.Bool  { return r.status >= 200 && r.status <= 299 }
func (r *response) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: response") }
func (r *response) AttrNames() []string   { return []string{"headers", "json", "status", "text"} }
func (r *response) Attr(name string) (starlark.Value, error) {
	switch name {
	case "status":
		return starlark.MakeInt(r.status), nil
	case "headers":
		return r.headers, nil
	case "text":
		return starlark.NewBuiltin("text", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.String(r.body), nil
		}), nil
	case "json":
		return starlark.NewBuiltin("json", func(th *starlark.Thread, _ *starlark.Builtin, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			if err := charge(th, satMul(16, int64(len(r.body))), func() string { return "response.json()" }); err != nil {
				return nil, err
			}
			dec := json.NewDecoder(strings.NewReader(r.body))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("response.json(): the body is not JSON: %w", err)
			}
			return toStarlark(v, 0)
		}), nil
	}
	return nil, nil
}
