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
	buf     bytes.Buffer
}

func newStream(ls *plugin.LineStream, p *process) *stream {
	return &stream{LineStream: ls, p: p, params: map[uint64][]byte{}}
}

// stage records the encoded params of the request that will carry id.
func (s *stream) stage(id uint64, params []byte) {
	s.mu.Lock()
	s.params[id] = params
	s.mu.Unlock()
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
	if !staged {
		s.mu.Unlock()
		return s.LineStream.WriteObject(obj)
	}
	defer s.mu.Unlock()
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
func (s *stream) ReadObject(v any) error {
	err := s.LineStream.ReadObject(v)
	if err != nil {
		s.p.fail(err)
	}
	return err
}
