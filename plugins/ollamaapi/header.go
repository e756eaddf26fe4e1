package ollamaapi

import (
	"strconv"
	"time"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// header is the model and creation time a response or stream line
// carries: the gateway's values from meta ("model", the name the client
// asked for, and "created", unix seconds) when present, else the backend's.
type header struct {
	model   []byte // aliases the call's meta
	created int64
	hasTime bool
}

func (h *header) read(c *sdk.Call) {
	h.model, _ = c.MetaBytes(abi.MetaModel)
	if v, ok := c.MetaBytes(abi.MetaCreated); ok {
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 && n < 1<<40 {
			h.created, h.hasTime = n, true
		}
	}
}

// appendOpen writes `{"model":…,"created_at":"…",` (the object left open
// after the comma); model and created are the backend's, used when the
// gateway gave none.
func (h *header) appendOpen(b []byte, model string, created int64) []byte {
	b = append(b, `{"model":`...)
	if len(h.model) > 0 {
		b = jsonw.Bytes(b, h.model)
	} else {
		b = jsonw.String(b, model)
	}
	if h.hasTime {
		created = h.created
	}
	b = append(b, `,"created_at":`...)
	return append(appendTime(b, created), ',')
}

// appendTime writes unix seconds as Ollama's RFC 3339 timestamp string
// (UTC; the gateway keeps whole seconds). Out-of-range values read as 0.
func appendTime(b []byte, sec int64) []byte {
	if sec < 0 || sec >= 1<<40 {
		sec = 0
	}
	b = append(b, '"')
	b = time.Unix(sec, 0).UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
