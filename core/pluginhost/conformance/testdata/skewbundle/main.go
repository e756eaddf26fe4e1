// Command skewbundle is a bundle whose fused request differs from its
// canonical path: the adapter tells the translator's Go value (fused)
// from one decoded from canonical JSON (canonical) by a slice's capacity,
// which JSON does not carry. The conformance kit's fused check must catch
// it (TestCheck_FusedMismatch).
package main

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

type translator struct{ sdk.Unimplemented }

func (translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	if err := req.DecodeJSON(body); err != nil {
		return sdk.BadInput(err.Error())
	}
	if req.Tools == nil {
		req.Tools = make([]canon.Tool, 0, 3) // not in the canonical JSON
	}
	return nil
}

type adapter struct{ sdk.Unimplemented }

func (adapter) EncodeRequest(c *sdk.Call, req *canon.ChatRequest, out *sdk.Output) error {
	out.SetMeta("path", "/v1/chat/completions")
	if cap(req.Tools) == 3 {
		out.Body = append(out.Body, `{"path":"fused"}`...)
	} else {
		out.Body = append(out.Body, `{"path":"canonical"}`...)
	}
	return nil
}

func init() {
	sdk.RegisterBundle("skew", "1.0.0",
		sdk.TranslatorPart(sdk.Manifest{Name: "canon-t", Version: "1.0.0", Format: "canonical",
			Routes: []sdk.Route{{Name: "chat", Kind: sdk.EndpointChat, Method: "POST", Path: "/v1/chat"}}}, translator{}),
		sdk.AdapterPart(sdk.Manifest{Name: "skew-a", Version: "1.0.0", Format: "skew", Framing: sdk.FramingSSE}, adapter{}))
}

func main() {}
