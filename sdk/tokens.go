package sdk

import "github.com/mindrouter/mindrouter/sdk/canon"

// TokenCountTranslator is implemented by a translator serving routes of
// kind EndpointTokenize (ABI 2.2): the host decodes the route's body with
// DecodeRequest (meta "route" says it is the tokenize route, so the body
// may be a dialect's count-tokens shape), counts the canonical request's
// tokens itself, and asks the translator to write the count.
type TokenCountTranslator interface {
	EncodeTokenCount(c *Call, tc *canon.TokenCount, out *Output) error
}
