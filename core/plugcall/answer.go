package plugcall

import (
	"strconv"

	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/shape"
)

// answerShape is a response shape (ABI 2.11, sdk/shape.Response) a
// fused response call left, with the result metadata of that call that a
// matching answer repeats: its finish reason and content type (the usage
// and the output estimate come from the answer's holes).
type answerShape struct {
	r                   *shape.Response
	finish, contentType string
}

// answerKey is what a fused response call's result depends on besides the
// backend's body, the gateway's id and created: the components and the
// rest of headerMeta. A response shape is kept under it.
func (c *Calls) answerKey(h *Header) []byte {
	k := append(c.key[:0], byte(c.T>>8), byte(c.T), byte(c.A>>8), byte(c.A))
	k = abi.AppendMeta(k, abi.MetaRoute, c.Route)
	k = abi.AppendMeta(k, abi.MetaKind, c.Kind)
	k = append(k, c.Extra...)
	k = abi.AppendMeta(k, abi.MetaModel, h.Model)
	if h.IncludeUsage {
		k = abi.AppendMeta(k, abi.MetaIncludeUsage, "1")
	}
	k = c.appendEcho(k)
	c.key = k
	return k
}

// shapedResponse translates body with the response shape kept for this
// call's metadata, if there is one and the body matches it.
func (c *Calls) shapedResponse(v *pluginhost.Version, key []byte, h *Header, body []byte, d *Decoded, e *Encoded) bool {
	s, _ := v.Answer(key).(*answerShape)
	if s == nil {
		return false
	}
	c.idBuf = append(c.idBuf[:0], h.ID...)
	var cb [20]byte
	out, rep, ok := s.r.Apply(c.shapeOut[:0], body, c.idBuf, strconv.AppendInt(cb[:0], h.Created, 10))
	if !ok {
		return false
	}
	c.shapeOut = out
	*d = Decoded{FinishReason: s.finish}
	if rep.HasUsage {
		d.Usage = outcome.Usage{Prompt: rep.Prompt, Completion: rep.Completion, Reported: true}
	}
	if rep.Counted >= 0 {
		d.OutputTokens = sdk.OutputTokens(rep.Counted)
	}
	e.Body, e.ContentType = out, s.contentType
	c.Shaped = true
	return true
}

// keepAnswer keeps the response shape the last fused response call left
// (in c.a), if any. A call that leaves none keeps the one there: an answer
// of another form (a tool call) does not match it and costs nothing.
func (c *Calls) keepAnswer(v *pluginhost.Version, key []byte) {
	enc, ok := abi.MetaGet(c.a.Meta, abi.MetaResponseShape)
	if !ok {
		return
	}
	r, err := shape.ParseResponse(enc)
	if err != nil {
		return // a malformed shape: every answer is called, as before
	}
	v.KeepAnswer(key, &answerShape{r: r, finish: metaConst(c.a.Meta, abi.MetaFinishReason, ""),
		contentType: metaConst(c.a.Meta, abi.MetaContentType, "")})
}
