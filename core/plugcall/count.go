package plugcall

import (
	"context"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// countsSince is the first ABI version with the count ops.
const countsSince = abi.VersionMajor<<16 | 7

// CountsTokens reports whether an adapter component serves the count ops
// (ABI 2.7): its manifest says so, and it speaks a version that has them.
func CountsTokens(m *sdk.Manifest) bool {
	return m.CountsTokens && m.Kind == sdk.KindAdapter && m.ABI >= countsSince
}

// EncodeCount runs the adapter's count_request_encode op (ABI 2.7): the
// backend request that counts the canonical request's input tokens the
// engine's way. Hints are those of request_encode (the host sends the
// context length); fetched images (c.Images) go along as they do there.
func (c *Calls) EncodeCount(ctx context.Context, a *pluginhost.Version, canonical []byte, h Hints, r *BackendRequest) error {
	c.meta = appendHints(c.meta[:0], h)
	c.meta = append(c.meta, c.Images...)
	if err := a.Call(ctx, abi.OpCountRequestEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.meta, Payload: canonical}, &c.a); err != nil {
		return err
	}
	m := c.a.Meta
	r.Method = metaConst(m, abi.MetaMethod, "POST")
	r.Path = metaConst(m, abi.MetaPath, "/")
	r.ContentType = metaConst(m, abi.MetaContentType, "application/json")
	r.Body = c.a.Payload
	return nil
}

// DecodeCount runs the adapter's count_response_decode op (ABI 2.7) on
// the body of the backend's 200 answer: the count, and the engine's
// context window for the model (0 when it did not say).
func (c *Calls) DecodeCount(ctx context.Context, a *pluginhost.Version, body []byte) (count, maxLen int, err error) {
	if err := a.Call(ctx, abi.OpCountResponseDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Payload: body}, &c.a); err != nil {
		return 0, 0, err
	}
	var tc canon.TokenCount
	if err := tc.DecodeJSON(c.a.Payload); err != nil {
		return 0, 0, err
	}
	return tc.Count, tc.MaxModelLen, nil
}
