// Command adapter is a small, well-behaved NDJSON adapter used by the plugin
// host's tests and by the conformance kit's own tests (split invariance).
package main

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"bytes"
	"strconv"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

type adapter struct{ sdk.Unimplemented }

// EncodeRequest writes the model name as the body.
func (adapter) EncodeRequest(c *sdk.Call, req *canon.ChatRequest, out *sdk.Output) error {
	out.Body = append(out.Body, req.Model...)
	out.SetMeta(abi.MetaPath, "/api/chat")
	return nil
}

// DecodeStream turns every NDJSON line into one chunk whose content is the
// line and whose Created field is the running line number, carried across
// calls in the state blob. A line `{"done":true}` ends the stream.
func (adapter) DecodeStream(c *sdk.Call, st *sdk.State, events [][]byte, chunks *[]canon.ChatChunk) error {
	var n int64
	if len(st.In) > 0 {
		r := sdk.StateReader{B: st.In}
		n = r.Int()
		if r.Err() != nil {
			return sdk.BadInput("bad state")
		}
	}
	for _, ev := range events {
		if bytes.Equal(ev, []byte(`{"done":true}`)) {
			c.Done()
			continue
		}
		n++
		*chunks = append(*chunks, canon.ChatChunk{
			ID:      "chunk-" + strconv.FormatInt(n, 10),
			Created: n,
			Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: string(ev)}}},
		})
	}
	w := sdk.StateWriter{}
	w.Int(n)
	st.Set(w.B)
	return nil
}

// DecodeError maps the backend status and body into a canonical error.
func (adapter) DecodeError(c *sdk.Call, status int, body []byte, e *canon.Error) error {
	e.Status = status
	e.Type = canon.ErrBackend
	e.Message = string(body)
	return nil
}

func init() {
	sdk.RegisterAdapter(sdk.Manifest{Name: "adapter", Version: "1", Format: "test", Framing: sdk.FramingNDJSON}, adapter{})
}

func main() {}
