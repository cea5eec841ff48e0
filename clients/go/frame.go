package stateclient

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
)

// A request goes out as one line built in one buffer: the params are marshalled once (into a
// buffer kept for the next call) and the envelope is appended around them by hand, instead of
// marshalling the params and then the envelope, which compacts the params a second time. The
// bytes are the ones json.Marshal of the envelope wrote (field order, HTML escaping).

type frameBuffers struct {
	params bytes.Buffer
	enc    *json.Encoder
	line   []byte
}

var framePool = sync.Pool{New: func() interface{} {
	f := &frameBuffers{}
	f.enc = json.NewEncoder(&f.params)
	return f
}}

// maxPooledFrame: a buffer grown past it (a large save) is not kept for the next call.
const maxPooledFrame = 64 << 10

func getFrame() *frameBuffers { return framePool.Get().(*frameBuffers) }

func putFrame(f *frameBuffers) {
	if f.params.Cap() > maxPooledFrame || cap(f.line) > maxPooledFrame {
		return
	}
	f.params.Reset()
	f.line = f.line[:0]
	framePool.Put(f)
}

// marshalParams marshals params into f as json.Marshal does (the encoder's newline dropped).
func (f *frameBuffers) marshalParams(params interface{}) ([]byte, error) {
	f.params.Reset()
	if err := f.enc.Encode(params); err != nil {
		return nil, err
	}
	b := f.params.Bytes()
	return b[:len(b)-1], nil
}

// requestLine is {"jsonrpc":"2.0","id":id,"method":method,"params":params} and a newline.
func (f *frameBuffers) requestLine(id int64, method string, params []byte) []byte {
	b := append(f.line[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	b = append(b, "}\n"...)
	f.line = b
	return b
}

// appendString appends s as encoding/json writes a string: as is when it holds only
// printable ASCII that needs no escape (every method name), else through json.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
