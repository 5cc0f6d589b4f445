package subprocess

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"unsafe"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// stream is the connection's framing with one shortcut: a request whose
// params were encoded up front (stage) is written as
//
//	{"jsonrpc":"2.0","id":N,"method":"M","params":<params>}
//
// straight from those bytes. jsonrpc2 would otherwise marshal the params
// into a map and re-validate them three more times, which for a 1 KB
// prompt costs more than the whole pipe round trip. jsonrpc2 still assigns
// the id, tracks the call and matches the response; its OnSend hook, run
// under its send lock right before WriteObject, says which request is
// being written, and WriteObject takes the shortcut only when the message
// it is handed is that very request.
type stream struct {
	*plugin.LineStream
	p *process

	mu      sync.Mutex
	params  map[uint64][]byte // staged params by request id
	sending *jsonrpc2.Request // set by onSend, consumed by WriteObject

	wmu sync.Mutex   // guards buf
	buf bytes.Buffer // the request line being written

	// Results of calls still waited for, by id: the response handed to
	// jsonrpc2 carries a placeholder result, and the caller takes the
	// real bytes from here (see ReadObject).
	waiting map[uint64]bool
	results map[uint64][]byte
}

func newStream(ls *plugin.LineStream, p *process) *stream {
	return &stream{LineStream: ls, p: p, params: map[uint64][]byte{},
		waiting: map[uint64]bool{}, results: map[uint64][]byte{}}
}

// stage records the encoded params of the request that will carry id,
// and that its result is waited for.
func (s *stream) stage(id uint64, params []byte) {
	s.mu.Lock()
	s.params[id] = params
	s.waiting[id] = true
	s.mu.Unlock()
}

// result takes the result bytes of call id once jsonrpc2 completed it, and
// stops waiting for it; ok is false if the response carried no result.
func (s *stream) result(id uint64) (raw []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, ok = s.results[id]
	delete(s.results, id)
	delete(s.waiting, id)
	return raw, ok
}

// abandon stops waiting for call id: its late answer is dropped.
func (s *stream) abandon(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.results, id)
	delete(s.waiting, id)
}

// unstage forgets params that were never sent.
func (s *stream) unstage(id uint64) {
	s.mu.Lock()
	delete(s.params, id)
	s.mu.Unlock()
}

// onSend is the jsonrpc2.OnSend hook.
func (s *stream) onSend(req *jsonrpc2.Request, _ *jsonrpc2.Response) {
	if req == nil || req.Notif || req.ID.IsString {
		return
	}
	s.mu.Lock()
	s.sending = req
	s.mu.Unlock()
}

func (s *stream) WriteObject(obj any) error {
	s.mu.Lock()
	req := s.sending
	s.sending = nil
	params, staged := []byte(nil), false
	if req != nil && requestOf(obj) == req {
		params, staged = s.params[req.ID.Num]
		delete(s.params, req.ID.Num)
	}
	s.mu.Unlock() // never held while writing: the reader needs it meanwhile
	if !staged {
		return s.LineStream.WriteObject(obj)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.buf.Reset()
	s.buf.WriteString(`{"jsonrpc":"2.0","id":`)
	s.buf.WriteString(strconv.FormatUint(req.ID.Num, 10))
	s.buf.WriteString(`,"method":`)
	method, _ := json.Marshal(req.Method)
	s.buf.Write(method)
	s.buf.WriteString(`,"params":`)
	s.buf.Write(params)
	s.buf.WriteString("}\n")
	err := s.LineStream.WriteLine(s.buf.Bytes())
	if s.buf.Cap() > 1<<20 {
		s.buf = bytes.Buffer{}
	}
	return err
}

// requestOf returns the *jsonrpc2.Request inside the message jsonrpc2 is
// writing (its unexported anyMessage), or nil.
func requestOf(obj any) *jsonrpc2.Request {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("request")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*jsonrpc2.Request]() {
		return nil
	}
	return (*jsonrpc2.Request)(unsafe.Pointer(f.Pointer()))
}

// ReadObject reads a message and keeps the error that ended the
// connection: jsonrpc2 only logs it.
//
// A success response to a call still waited for takes a shortcut: its
// result bytes are kept for the caller, and jsonrpc2 is handed the same
// response with a placeholder result. jsonrpc2 would otherwise decode the
// result three times, once into generic maps.
func (s *stream) ReadObject(v any) error {
	line, err := s.LineStream.ReadLine()
	if err == nil {
		if short := s.shortcut(line); short != nil {
			line = short
		}
		if u, ok := v.(json.Unmarshaler); ok {
			err = u.UnmarshalJSON(line)
		} else {
			err = json.Unmarshal(line, v)
		}
		if err != nil {
			err = &plugin.FrameError{Err: err, Line: append([]byte(nil), line[:min(len(line), 257)]...)}
		}
	}
	if err != nil {
		s.p.fail(err)
	}
	return err
}

// envelope is a response as the shortcut reads it.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// shortcut returns the placeholder form of line, or nil to decode it as
// it is.
func (s *stream) shortcut(line []byte) []byte {
	var env envelope
	if json.Unmarshal(line, &env) != nil || env.Method != nil || env.Error != nil || len(env.Result) == 0 {
		return nil
	}
	id, err := strconv.ParseUint(string(env.ID), 10, 64)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.waiting[id] {
		return nil
	}
	s.results[id] = env.Result
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatUint(id, 10) + `,"result":true}`)
}
