package responses

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// ids is a response's identity: the hex of the gateway's request id
// ("chatcmpl-<hex>" → "resp_<hex>", "msg_<hex>_<n>", ...), the model and
// created_at. The strings view the call's meta, valid only during the call.
type ids struct {
	hex, model, created string
	num                 [20]byte // created, when the meta had none
	echo                echoNote // the request's note (defaults without one)
}

// read fills the ids from the call's meta, falling back to the backend's
// id, model and created when the host sent none.
func (h *ids) read(c *sdk.Call, id, model string, created int64) {
	if b, ok := c.MetaBytes(abi.MetaID); ok && len(b) > 0 {
		id = view(b)
	}
	h.hex = strings.TrimPrefix(id, "chatcmpl-")
	h.model = model
	if b, ok := c.MetaBytes(abi.MetaModel); ok && len(b) > 0 {
		h.model = view(b)
	}
	if b, ok := c.MetaBytes(abi.MetaCreated); ok && openai.ValidCreated(b) {
		h.created = view(b)
	} else {
		h.created = view(strconv.AppendInt(h.num[:0], created, 10))
	}
	h.echo.read(c)
}

// view returns b as a string without copying; b must not change while the
// string is in use (the call's meta and state, and scratch buffers not
// written again until the call ends).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Item kinds, in the state blob and in ids ("rs_", "msg_", "fc_").
const (
	kindReasoning byte = iota + 1
	kindMessage
	kindFunction
)

// appendRespID writes "resp_<hex>" as a JSON string.
func (h *ids) appendRespID(b []byte) []byte {
	b = append(b, `"resp_`...)
	b = jsonw.Escaped(b, h.hex)
	return append(b, '"')
}

// appendItemID writes an item id: "<prefix>_<hex>_<output index>".
func (h *ids) appendItemID(b []byte, kind byte, n int) []byte {
	switch kind {
	case kindReasoning:
		b = append(b, `"rs_`...)
	case kindMessage:
		b = append(b, `"msg_`...)
	default:
		b = append(b, `"fc_`...)
	}
	b = jsonw.Escaped(b, h.hex)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '"')
}

// appendCallID writes a call_id for a tool call the backend gave no id:
// "call_<hex>_<output index>", stable across the stream so the client can
// send it back with the function_call_output.
func (h *ids) appendCallID(b []byte, n int) []byte {
	b = append(b, `"call_`...)
	b = jsonw.Escaped(b, h.hex)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '"')
}
