package plugcall

import (
	"context"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// EncodeTokens runs the translator's tokens_encode op (ABI 2.2): the
// canonical token count of a tokenize route → the client's body.
func (c *Calls) EncodeTokens(ctx context.Context, t *pluginhost.Version, count []byte, e *Encoded) error {
	if err := t.Call(ctx, abi.OpTokensEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.routeMeta(), Payload: count}, &c.t); err != nil {
		return err
	}
	e.Body, e.ContentType = c.t.Payload, metaConst(c.t.Meta, abi.MetaContentType, "")
	return nil
}
