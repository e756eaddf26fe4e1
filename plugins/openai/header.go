package openai

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"strconv"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// header is the id, model and created a response or chunk carries: the
// gateway's values from meta ("id", "model", "created") when present, else
// the backend's. The byte slices alias the call's meta.
type header struct {
	id, model, created []byte
	idS, modelS        string
	createdN           int64
	// pre, when set, is what append writes for a chunk: the opening made
	// of the gateway's values alone, escaped once per call.
	pre []byte
}

func (h *header) read(c *sdk.Call, id, model string, created int64) {
	h.id, _ = c.MetaBytes(abi.MetaID)
	h.model, _ = c.MetaBytes(abi.MetaModel)
	h.created, _ = c.MetaBytes(abi.MetaCreated)
	if !ValidCreated(h.created) {
		h.created = nil
	}
	h.idS, h.modelS, h.createdN = id, model, created
}

// fallback replaces the backend's values (used for stream chunks, which
// each carry their own).
func (h *header) fallback(id, model string, created int64) {
	h.idS, h.modelS, h.createdN = id, model, created
}

// ValidCreated reports whether b, the host's created meta, is a JSON-safe
// unsigned integer (no sign, no leading zero) that fits an int64, so it
// can be copied into a response as it is.
func ValidCreated(b []byte) bool {
	if len(b) == 0 || len(b) > 18 || len(b) > 1 && b[0] == '0' {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// append writes `{"id":…,"object":object,"created":…,"model":…`, leaving the
// object open.
func (h *header) append(b []byte, object string) []byte {
	if h.pre != nil && object == chunkObject {
		return append(b, h.pre...)
	}
	b = append(b, `{"id":`...)
	if len(h.id) > 0 {
		b = jsonw.Bytes(b, h.id)
	} else {
		b = jsonw.String(b, h.idS)
	}
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	if h.created != nil {
		b = append(b, h.created...)
	} else {
		b = jsonw.Int(b, h.createdN)
	}
	b = append(b, `,"model":`...)
	if len(h.model) > 0 {
		b = jsonw.Bytes(b, h.model)
	} else {
		b = jsonw.String(b, h.modelS)
	}
	return b
}

// appendCallID writes an id for a tool call the backend gave none:
// "call_<response id without chatcmpl->_<index>", stable across the stream
// so a client can send it back with the tool result.
func (h *header) appendCallID(b []byte, index int) []byte {
	b = append(b, `"call_`...)
	if len(h.id) > 0 {
		id := h.id
		if len(id) > len("chatcmpl-") && string(id[:len("chatcmpl-")]) == "chatcmpl-" {
			id = id[len("chatcmpl-"):]
		}
		b = jsonw.Escaped(b, string(id))
	} else {
		id := h.idS
		if len(id) > len("chatcmpl-") && id[:len("chatcmpl-")] == "chatcmpl-" {
			id = id[len("chatcmpl-"):]
		}
		b = jsonw.Escaped(b, id)
	}
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(index), 10)
	return append(b, '"')
}
