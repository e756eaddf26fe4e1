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

// Response shapes (ABI 2.11, shape.Response). A non-streamed vLLM answer
// is the same bytes from one request to the next but for its id,
// created, content and counts, and the patch's answer is the same text
// around the content, the counts and the gateway's id and created. A
// response call leaves the host that rule when it can check, on the answer
// it just wrote, that copying the holes gives its own bytes: the content
// is in canonical form (the host then requires it of every later
// answer), the counts are what it wrote, there is no cached or reasoning
// count, and the gateway's id needed no escape. Later answers of the same
// form then cost the host a match and a copy instead of a call; any other
// answer (a tool call, reasoning, another key order, a think tag in the
// content) does not match and goes to the module.

// answerSpans are where a response's values lie in the backend's body
// (kNone: absent); dup: a repeated id or created.
type answerSpans struct {
	id, created, pt, ct, tt span
	dup                     bool
}

// answerAt are where response wrote its parts in its answer: the end of
// the header (id, object, created, model), the content string's body, and
// the prompt, completion and total counts.
type answerAt struct {
	header  int
	content [2]int
	usage   [3][2]int
}

// thinkDeny: content with a think tag is split by vllm's reader (the
// patch declines it), so no response shape matches it.
var thinkDeny = [][]byte{[]byte("think>")}

// leaveAnswerShape leaves the response shape of body (the backend's
// answer) whose translation is ans, written with the gateway's id and
// created; content is the content span of body, at where ans holds the
// parts. It leaves none when any check fails.
func (p *openaiVLLM) leaveAnswerShape(out *sdk.Output, body, ans, id, created []byte, content span, at *answerAt, r *sdk.PatchReport) {
	a := &p.ans
	if a.dup || a.id.kind != kStr || a.created.kind != kNum || a.pt.kind != kNum || a.ct.kind != kNum || a.tt.kind != kNum ||
		r.Usage.CachedTokens != 0 || r.Usage.ReasoningTokens != 0 || r.Usage.TotalTokens == 0 {
		return
	}
	// The header: {"id":"<id>","object":"chat.completion","created":<created>,"model":...
	const idAt = len(`{"id":"`)
	idEnd := idAt + len(id)
	crAt := idEnd + len(`","object":"chat.completion","created":`)
	crEnd := crAt + len(created)
	if crEnd > at.header || string(ans[idAt:idEnd]) != string(id) || ans[idEnd] != '"' || string(ans[crAt:crEnd]) != string(created) {
		return // an id jsonw escaped
	}
	// Each copied hole must be, in the answer, the backend's bytes.
	type hole struct {
		src   span
		flags byte
		out   [2]int
	}
	holes := [...]hole{
		{a.id, 0, [2]int{-1, -1}},
		{a.created, shape.FlagInt, [2]int{-1, -1}},
		{content, shape.FlagCounted, at.content},
		{a.pt, shape.FlagInt | shape.FlagPrompt, at.usage[0]},
		{a.ct, shape.FlagInt | shape.FlagCompletion, at.usage[1]},
		{a.tt, shape.FlagInt | shape.FlagNonEmpty, at.usage[2]},
	}
	for _, h := range holes[2:] {
		if string(body[h.src.a:h.src.b]) != string(ans[h.out[0]:h.out[1]]) {
			return
		}
	}
	// The input: literals between the holes, in the body's order.
	order := [len(holes)]int{0, 1, 2, 3, 4, 5}
	for i := 1; i < len(order); i++ { // insertion sort by position
		for j := i; j > 0 && holes[order[j]].src.a < holes[order[j-1]].src.a; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	var in [len(holes) + 1][]byte
	var flags [len(holes)]byte
	var index [len(holes)]int // hole number of holes[i] in the input
	from := 0
	for k, i := range order {
		h := holes[i]
		if h.src.a < from {
			return // overlapping (not reached: distinct values)
		}
		in[k], flags[k], index[i] = body[from:h.src.a], h.flags, k
		from = h.src.b
	}
	in[len(holes)] = body[from:]
	// The output: literals around the gateway's id and created and the
	// copied holes, in the answer's order.
	parts := [...]shape.Part{
		shape.Lit(ans[:idAt]), shape.Meta(shape.PartID), shape.Lit(ans[idEnd:crAt]), shape.Meta(shape.PartCreated),
		shape.Lit(ans[crEnd:at.content[0]]), shape.Hole(index[2]),
		shape.Lit(ans[at.content[1]:at.usage[0][0]]), shape.Hole(index[3]),
		shape.Lit(ans[at.usage[0][1]:at.usage[1][0]]), shape.Hole(index[4]),
		shape.Lit(ans[at.usage[1][1]:at.usage[2][0]]), shape.Hole(index[5]),
		shape.Lit(ans[at.usage[2][1]:]),
	}
	enc, err := shape.AppendResponse(p.sh.enc[:0], in[:], flags[:], thinkDeny, parts[:])
	if err != nil {
		return // say, "created" as a float: the next answer is called
	}
	p.sh.enc = enc
	out.SetMetaBytes(abi.MetaResponseShape, enc)
}
