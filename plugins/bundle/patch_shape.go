package bundle

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/shape"
)

// Stream shapes (ABI 2.10, sdk/shape). Once a stream is under way, with
// its role sent and its content plain, each content-only event of the
// backend translates to the same OpenAI chunk around its text: the
// patches' own templates (eventTemplate, lineTemplate) already scan only
// the strings of such an event. A stream call that ends in that state,
// its last event one of the template's, leaves the host the template and
// the chunk around the content, and the host translates the next such
// events itself (an event a slow stream sends alone, or a whole batch at
// full speed) without calling the module: about 13 µs of WebAssembly an
// event against well under 1 µs. Such an event changes no state, reports
// no usage or finish, and counts sdk.OutputTokens of its text, as the
// patch does (the conformance check and TestShape_MatchesPatch hold the
// two to the same bytes).

// chunkTail closes a content-only chunk after its content string's
// closing quote (appendChunkEvent with no role, no finish).
var chunkTail = []byte(`"},"logprobs":null,"finish_reason":null}]}` + "\n\n")

// shapeScratch holds a patch's encoded shape and its parts between calls.
type shapeScratch struct {
	pre, enc []byte
	in       [][]byte
}

// leave writes the shape of events in (the template's literals, flags
// one per hole, hole content the chunk's text) whose chunk is pre, the
// content's opening quote and the text, then chunkTail; hdr is the
// chunk's opening up to its choices array.
func (sc *shapeScratch) leave(out *sdk.Output, hdr []byte, flags []byte, content int) {
	sc.pre = append(append(append(sc.pre[:0], "data: "...), hdr...), `{"index":0,"delta":{"content":"`...)
	parts := [3]shape.Part{shape.Lit(sc.pre), shape.Hole(content), shape.Lit(chunkTail)}
	enc, err := shape.Append(sc.enc[:0], sc.in, flags, parts[:])
	if err != nil {
		return // not a shape (a template that never matched): the host calls as before
	}
	sc.enc = enc
	out.SetMetaBytes(abi.MetaStreamShape, enc)
}

var (
	contentOnly    = []byte{shape.FlagNonEmpty | shape.FlagCounted}
	createdContent = []byte{0, shape.FlagNonEmpty | shape.FlagCounted}
)

// leaveShape: vLLM's content chunk, prefix and suffix around its content.
func (t *eventTemplate) leaveShape(sc *shapeScratch, out *sdk.Output, hdr []byte) {
	sc.in = append(sc.in[:0], t.prefix, t.suffix)
	sc.leave(out, hdr, contentOnly, 0)
}

// leaveShape: Ollama's content line, around created_at (when the
// template has it as a hole: it is not read) and content.
func (t *lineTemplate) leaveShape(sc *shapeScratch, out *sdk.Output, hdr []byte) {
	if t.two {
		sc.in = append(sc.in[:0], t.prefix, t.middle, t.suffix)
		sc.leave(out, hdr, createdContent, 1)
		return
	}
	sc.in = append(sc.in[:0], t.prefix, t.suffix)
	sc.leave(out, hdr, contentOnly, 0)
}
