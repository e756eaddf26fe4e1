package responses

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeTokenCount writes the input_tokens answer:
// {"object":"response.input_tokens","input_tokens":N}.
func (t *Translator) EncodeTokenCount(c *sdk.Call, tc *canon.TokenCount, out *sdk.Output) error {
	b := append(out.Body, `{"object":"response.input_tokens","input_tokens":`...)
	b = jsonw.Int(b, int64(tc.Count))
	out.Body = append(b, '}')
	return nil
}
