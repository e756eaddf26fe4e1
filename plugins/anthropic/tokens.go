package anthropic

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeTokenCount writes count_tokens' answer, {"input_tokens": n}
// (https://docs.claude.com/en/api/messages-count-tokens). The count is the
// gateway's estimate with a generic tokenizer; Anthropic's shape has no
// field to say so.
func (t *Translator) EncodeTokenCount(c *sdk.Call, tc *canon.TokenCount, out *sdk.Output) error {
	b := append(out.Body, `{"input_tokens":`...)
	b = jsonw.Int(b, int64(tc.Count))
	out.Body = append(b, '}')
	return nil
}

var _ sdk.TokenCountTranslator = (*Translator)(nil)
