package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Plugin dispatches ABI calls to its components: one Translator or Adapter
// (NewTranslator, NewAdapter), or several (NewBundle). The WebAssembly
// exports drive the registered Plugin; natively, the gateway's conformance
// kit and benchmarks drive one directly. Not safe for concurrent use: like a
// wasm instance, one Plugin serves one call at a time.
type Plugin struct {
	manifest Manifest
	parts    []Component
	patches  []patchEntry
	logf     func(level int, msg string)

	// Reused per call.
	call   Call
	out    Output
	state  State // the call's state; the adapter's in a fused stream
	tstate State // the translator's state in a fused stream
	fstate []byte
	fset   bool // fstate is the fused stream's new state
	tmeta  []byte
	ameta  []byte
	// A patch's report and stream view (fields, as the arguments of an
	// interface call escape).
	report  PatchReport
	pstream PatchStream
	req     canon.ChatRequest
	resp    canon.ChatResponse
	cerr    canon.Error
	models  canon.ModelList
	disc    canon.Discovery
	ereq    canon.EmbeddingRequest
	eresp   canon.EmbeddingResponse
	chunks  []canon.ChatChunk
	events  [][]byte
	list    []byte
	res     []byte
}

// NewTranslator returns a native Plugin serving t: a module of one
// component, whose manifest is m.
func NewTranslator(m Manifest, t Translator) *Plugin { return newPlugin(TranslatorPart(m, t)) }

// NewAdapter returns a native Plugin serving a: a module of one component,
// whose manifest is m.
func NewAdapter(m Manifest, a Adapter) *Plugin { return newPlugin(AdapterPart(m, a)) }

func newPlugin(c Component) *Plugin {
	return &Plugin{manifest: c.m, parts: []Component{c}, logf: hostLog}
}

// stamp fills the versions the SDK reports in a manifest.
func stamp(m *Manifest) {
	m.ABI = abi.Version
	m.SDKVersion = Version
	m.GoVersion = runtime.Version()
}

// Manifest returns the plugin's manifest.
func (p *Plugin) Manifest() Manifest { return p.manifest }

// SetLogger routes Call.Log for a native plugin (the wasm build sends logs
// to the host import instead).
func (p *Plugin) SetLogger(f func(level int, msg string)) { p.logf = f }

func (p *Plugin) log(level int, msg string) {
	if p.logf != nil {
		p.logf(level, msg)
	}
}

// Init configures the plugin and returns a result area whose payload is the
// manifest JSON. The result is valid until the next call. Every component
// implementing Configurable gets config (a bundle hands its one config to
// each of them, in component order); an empty config configures nothing.
func (p *Plugin) Init(config []byte) []byte {
	if len(config) > 0 {
		for i := range p.parts {
			c, ok := p.parts[i].impl().(Configurable)
			if !ok {
				continue
			}
			if err := c.Configure(config); err != nil {
				msg := "configure: " + err.Error()
				if p.manifest.Kind == KindBundle {
					msg = "configure " + p.parts[i].m.Name + ": " + err.Error()
				}
				return p.result(abi.StatusBadInput, 0, nil, nil, msg)
			}
		}
	}
	// Cold path: encoding/json is fine here.
	m, err := json.Marshal(p.manifest)
	if err != nil {
		return p.result(abi.StatusPluginError, 0, nil, nil, "marshal manifest: "+err.Error())
	}
	return p.result(abi.StatusOK, 0, nil, m, "")
}

// Call runs one op on an input laid out as abi describes (call header then
// state, meta and payload) and returns the result area, valid until the next
// call. The header's component indexes choose the translator (translator
// ops), the adapter (adapter ops) or both (fused ops); a missing component
// or one of the wrong kind is StatusUnsupported. A panic in plugin code
// becomes StatusPluginError.
func (p *Plugin) Call(op abi.Op, in []byte) (res []byte) {
	defer func() {
		if r := recover(); r != nil {
			res = p.result(abi.StatusPluginError, 0, nil, nil, fmt.Sprintf("panic in %s: %v", op, r))
		}
	}()
	h, state, meta, payload, err := abi.ParseCall(in)
	if err != nil {
		return p.result(abi.StatusBadInput, 0, nil, nil, err.Error())
	}
	p.call = Call{Op: op, Flags: h.Flags, RequestID: h.RequestID, meta: meta, plugin: p}
	p.out.Body, p.out.meta = p.out.Body[:0], p.out.meta[:0]
	p.state.In, p.state.out, p.state.set = state, p.state.out[:0], false
	p.fset = false

	switch {
	case op >= abi.OpFusedRequest && op <= abi.OpFusedStream:
		err = p.dispatchFused(op, &h, state, meta, payload)
	case op >= abi.OpRequestEncode && op <= abi.OpCountResponseDecode:
		var a Adapter
		if a, err = p.adapter(op, h.Adapter); err == nil {
			err = p.dispatchAdapter(a, op, payload)
		}
	case op >= abi.OpRequestDecode && op <= abi.OpRerankResponseEncode:
		var t Translator
		if t, err = p.translator(op, h.Translator); err == nil {
			err = p.dispatchTranslator(t, op, payload)
		}
	default:
		err = ErrUnsupported
	}
	if err != nil {
		return p.errorResult(err)
	}
	var flags uint32
	st, set := p.state.out, p.state.set
	if op == abi.OpFusedStream {
		st, set = p.fstate, p.fset
	}
	if !set {
		flags |= abi.ResultStateKeep
		st = nil
	}
	if p.call.done {
		flags |= abi.ResultStreamDone
	}
	return p.resultState(abi.StatusOK, flags, st, p.out.meta, p.out.Body, "")
}

func (p *Plugin) dispatchTranslator(t Translator, op abi.Op, payload []byte) error {
	c := &p.call
	switch op {
	case abi.OpRequestDecode:
		if err := p.decodeRequest(t, c, payload); err != nil {
			return err
		}
		p.out.Body = p.req.AppendJSON(p.out.Body)
	case abi.OpResponseEncode:
		if err := p.resp.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		return t.EncodeResponse(c, &p.resp, &p.out)
	case abi.OpStreamEncode:
		if err := p.decodeChunks(payload); err != nil {
			return err
		}
		return t.EncodeStream(c, &p.state, p.chunks, &p.out)
	case abi.OpErrorEncode:
		if err := p.cerr.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		if se, ok := t.(StreamErrorEncoder); ok && c.Meta(abi.MetaStream) == "1" {
			return se.EncodeStreamError(c, &p.state, &p.cerr, &p.out)
		}
		return t.EncodeError(c, &p.cerr, &p.out)
	case abi.OpModelsEncode:
		if err := p.models.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		return t.EncodeModels(c, &p.models, &p.out)
	case abi.OpEmbedRequestDecode, abi.OpEmbedResponseEncode:
		et, ok := t.(EmbeddingTranslator)
		if !ok {
			return ErrUnsupported
		}
		return p.dispatchEmbedTranslator(et, c, op, payload)
	case abi.OpRerankRequestDecode, abi.OpRerankResponseEncode:
		rt, ok := t.(RerankTranslator)
		if !ok {
			return ErrUnsupported
		}
		return p.dispatchRerankTranslator(rt, c, op, payload)
	case abi.OpTokensEncode:
		tt, ok := t.(TokenCountTranslator)
		if !ok {
			return ErrUnsupported
		}
		var tc canon.TokenCount
		if err := tc.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		return tt.EncodeTokenCount(c, &tc, &p.out)
	default:
		return ErrUnsupported
	}
	return nil
}

func (p *Plugin) dispatchAdapter(a Adapter, op abi.Op, payload []byte) error {
	c := &p.call
	switch op {
	case abi.OpRequestEncode:
		if err := p.req.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		p.hostHints(c)
		if err := p.modelCaps(c); err != nil {
			return err
		}
		return a.EncodeRequest(c, &p.req, &p.out)
	case abi.OpResponseDecode:
		if err := p.decodeResponse(a, c, payload); err != nil {
			return err
		}
		p.out.Body = p.resp.AppendJSON(p.out.Body)
		p.responseMeta()
	case abi.OpStreamDecode:
		if err := p.decodeStream(a, c, payload); err != nil {
			return err
		}
		p.list = p.list[:0]
		for i := range p.chunks {
			n := len(p.list)
			p.list = append(p.list, 0, 0, 0, 0)
			p.list = p.chunks[i].AppendJSON(p.list)
			putU32(p.list[n:], uint32(len(p.list)-n-4))
		}
		p.out.Body = append(p.out.Body, p.list...)
		p.streamMeta()
	case abi.OpErrorDecode:
		status, _ := strconv.Atoi(c.Meta(abi.MetaStatus))
		p.cerr = canon.Error{}
		if err := a.DecodeError(c, status, payload, &p.cerr); err != nil {
			return err
		}
		p.out.Body = p.cerr.AppendJSON(p.out.Body)
	case abi.OpProbeDecode:
		p.disc = canon.Discovery{}
		if err := a.DecodeProbe(c, c.Meta(abi.MetaProbe), payload, &p.disc); err != nil {
			return err
		}
		p.out.Body = p.disc.AppendJSON(p.out.Body)
	case abi.OpEmbedRequestEncode, abi.OpEmbedResponseDecode:
		ea, ok := a.(EmbeddingAdapter)
		if !ok {
			return ErrUnsupported
		}
		return p.dispatchEmbedAdapter(ea, c, op, payload)
	case abi.OpRerankRequestEncode, abi.OpRerankResponseDecode:
		ra, ok := a.(RerankAdapter)
		if !ok {
			return ErrUnsupported
		}
		return p.dispatchRerankAdapter(ra, c, op, payload)
	case abi.OpCountRequestEncode, abi.OpCountResponseDecode:
		ca, ok := a.(TokenCountAdapter)
		if !ok {
			return ErrUnsupported
		}
		return p.dispatchCountAdapter(ca, c, op, payload)
	default:
		return ErrUnsupported
	}
	return nil
}

// decodeRequest runs the translator's DecodeRequest into p.req and sets the
// routing meta of request_decode.
func (p *Plugin) decodeRequest(t Translator, c *Call, body []byte) error {
	p.req = canon.ChatRequest{}
	if err := t.DecodeRequest(c, body, &p.req); err != nil {
		return err
	}
	p.requestMeta()
	return nil
}

// requestMeta writes request_decode's meta for p.req.
func (p *Plugin) requestMeta() {
	p.out.SetMeta(abi.MetaModel, p.req.Model)
	p.out.SetMeta(abi.MetaStream, flag01(p.req.Stream))
	p.out.SetMeta(abi.MetaIncludeUsage, flag01(p.req.IncludeUsage))
	if p.req.MaxTokens > 0 {
		p.out.meta = appendMetaInt(p.out.meta, abi.MetaMaxTokens, p.req.MaxTokens)
	}
	if n := max(p.req.N, 1) * max(len(p.req.Prompt), 1); n > 1 {
		p.out.meta = appendMetaInt(p.out.meta, abi.MetaChoices, n)
	}
}

// hostHints applies request_encode's meta to p.req: ContextLength, the
// host's output cap on MaxTokens (abi.MetaMaxOutput) and the thinking
// default (abi.MetaThinkDefault).
func (p *Plugin) hostHints(c *Call) {
	if p.req.Think == canon.ThinkUnset {
		p.req.Think = ThinkDefault(c)
	}
	if v, ok := c.MetaBytes(abi.MetaContextLength); ok {
		if n, err := strconv.Atoi(string(v)); err == nil && n > 0 {
			p.req.ContextLength = n
		}
	}
	if v, ok := c.MetaBytes(abi.MetaMaxOutput); ok {
		if n, err := strconv.Atoi(string(v)); err == nil && n > 0 && (p.req.MaxTokens == 0 || n < p.req.MaxTokens) {
			p.req.MaxTokens = n
		}
	}
}

// modelCaps refuses, before the adapter encodes, a request the model
// cannot serve by the host's abi.MetaModelCaps (2.4): an image without
// "vision", tools without "tools". A thinking request the client lets go
// unmet (ChatRequest.ThinkOptional) is dropped for a model without
// "thinking". Unknown caps (no meta) refuse and drop nothing.
func (p *Plugin) modelCaps(c *Call) error {
	caps, ok := c.MetaBytes(abi.MetaModelCaps)
	if !ok {
		return nil
	}
	if p.req.ThinkOptional && p.req.Think != canon.ThinkUnset && p.req.Think != canon.ThinkOff && !hasCap(caps, canon.CapThinking) {
		p.req.Think, p.req.ThinkBudget = canon.ThinkUnset, 0
	}
	if len(p.req.Tools) > 0 && !hasCap(caps, canon.CapTools) {
		return BadInput("model " + p.req.Model + " does not support tools")
	}
	if !hasCap(caps, canon.CapVision) && hasImage(&p.req) {
		return BadInput("model " + p.req.Model + " does not accept images")
	}
	return nil
}

// ThinkDefault is the thinking a request that does not say gets on this
// call (abi.MetaThinkDefault): canon.ThinkOff for "off", canon.ThinkOn
// for "on", canon.ThinkUnset (the model's own default) otherwise and for
// a model whose known capabilities lack "thinking" (it has nothing to
// turn off, and Ollama refuses think: true for it). The SDK applies it to
// the canonical request; a patch that rewrites a body itself asks here.
func ThinkDefault(c *Call) canon.Think {
	v, ok := c.MetaBytes(abi.MetaThinkDefault)
	if !ok {
		return canon.ThinkUnset
	}
	if caps, known := c.MetaBytes(abi.MetaModelCaps); known && !hasCap(caps, canon.CapThinking) {
		return canon.ThinkUnset
	}
	switch string(v) {
	case "off":
		return canon.ThinkOff
	case "on":
		return canon.ThinkOn
	}
	return canon.ThinkUnset
}

// hasCap reports whether the comma-separated list caps holds name
// (abi.MetaListHas: MetaModelCaps is a list value).
func hasCap(caps []byte, name string) bool { return abi.MetaListHas(caps, name) }

// hasImage reports whether any message of r has an image part.
func hasImage(r *canon.ChatRequest) bool {
	for i := range r.Messages {
		for j := range r.Messages[i].Content {
			if r.Messages[i].Content[j].Type == canon.PartImage {
				return true
			}
		}
	}
	return false
}

// decodeResponse runs the adapter's DecodeResponse into p.resp.
func (p *Plugin) decodeResponse(a Adapter, c *Call, body []byte) error {
	p.resp = canon.ChatResponse{}
	return a.DecodeResponse(c, body, &p.resp)
}

// responseMeta reports p.resp's usage, first finish reason and output
// estimate.
func (p *Plugin) responseMeta() {
	var fr canon.FinishReason
	if len(p.resp.Choices) > 0 {
		fr = p.resp.Choices[0].FinishReason
	}
	p.usageMeta(p.resp.Usage, fr)
	out := 0
	for i := range p.resp.Choices {
		m := &p.resp.Choices[i].Message
		n := len(m.Reasoning)
		for j := range m.Content {
			n += len(m.Content[j].Text)
		}
		for j := range m.ToolCalls {
			n += len(m.ToolCalls[j].Name) + len(m.ToolCalls[j].Arguments)
		}
		out += OutputTokens(n)
	}
	p.outputMeta(out)
}

func (p *Plugin) decodeChunks(list []byte) error {
	p.chunks = p.chunks[:0]
	for {
		item, rest, ok, err := abi.NextItem(list)
		if err != nil {
			return BadInput("chunk list: " + err.Error())
		}
		if !ok {
			return nil
		}
		p.chunks = append(p.chunks, canon.ChatChunk{})
		if err := p.chunks[len(p.chunks)-1].DecodeJSON(item); err != nil {
			return BadInput(err.Error())
		}
		list = rest
	}
}

// splitEvents splits an event list into p.events.
func (p *Plugin) splitEvents(list []byte) error {
	p.events = p.events[:0]
	for {
		item, rest, ok, err := abi.NextItem(list)
		if err != nil {
			return BadInput("event list: " + err.Error())
		}
		if !ok {
			return nil
		}
		p.events = append(p.events, item)
		list = rest
	}
}

// decodeStream splits an event list and runs the adapter's DecodeStream
// into p.chunks, with p.state as the adapter's state.
func (p *Plugin) decodeStream(a Adapter, c *Call, list []byte) error {
	if err := p.splitEvents(list); err != nil {
		return err
	}
	p.chunks = p.chunks[:0]
	return a.DecodeStream(c, &p.state, p.events, &p.chunks)
}

// streamMeta reports the usage and choice 0's finish reason seen in
// p.chunks (the last one wins).
func (p *Plugin) streamMeta() {
	var usage *canon.Usage
	var fr canon.FinishReason
	out := 0
	for i := range p.chunks {
		if u := p.chunks[i].Usage; u != nil {
			usage = u
		}
		for j := range p.chunks[i].Choices {
			ch := &p.chunks[i].Choices[j]
			if f := ch.FinishReason; f != "" && ch.Index == 0 {
				fr = f
			}
			n := len(ch.Delta.Content) + len(ch.Delta.Reasoning)
			for k := range ch.Delta.ToolCalls {
				n += len(ch.Delta.ToolCalls[k].Name) + len(ch.Delta.ToolCalls[k].Arguments)
			}
			out += OutputTokens(n)
		}
	}
	p.usageMeta(usage, fr)
	p.outputMeta(out)
}

// OutputTokens estimates the tokens in one delta (or message) of n bytes
// of text, for abi.MetaOutputTokens: none for no text, else one, plus one
// per 4 bytes beyond the first 12. Engines stream about a token per
// delta, so a stream's deltas count it closely; a delta (or a whole
// message) holding more is counted at about 4 bytes a token.
func OutputTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return 1 + (max(n-12, 0)+3)/4
}

// outputMeta reports an output estimate (abi.MetaOutputTokens).
func (p *Plugin) outputMeta(n int) {
	if n > 0 {
		p.out.meta = appendMetaInt(p.out.meta, abi.MetaOutputTokens, n)
	}
}

// usageMeta reports token usage and the finish reason to the host, so it
// learns them without parsing canonical JSON (ABI v2).
func (p *Plugin) usageMeta(u *canon.Usage, fr canon.FinishReason) {
	if u != nil {
		p.out.meta = appendMetaInt(p.out.meta, abi.MetaPromptTokens, u.PromptTokens)
		p.out.meta = appendMetaInt(p.out.meta, abi.MetaCompletionTokens, u.CompletionTokens)
		if u.ReasoningTokens > 0 {
			p.out.meta = appendMetaInt(p.out.meta, abi.MetaReasoningTokens, u.ReasoningTokens)
		}
		if u.CachedTokens > 0 {
			p.out.meta = appendMetaInt(p.out.meta, abi.MetaCachedTokens, u.CachedTokens)
		}
	}
	if fr != "" {
		p.out.SetMeta(abi.MetaFinishReason, string(fr))
	}
}

func appendMetaInt(dst []byte, key string, v int) []byte {
	var b [20]byte
	return abi.AppendMetaBytes(dst, key, strconv.AppendInt(b[:0], int64(v), 10))
}

func flag01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func (p *Plugin) errorResult(err error) []byte {
	var in *InputError
	var ni *NeedImagesError
	switch {
	case errors.As(err, &in):
		return p.result(abi.StatusBadInput, 0, nil, nil, in.Msg)
	case errors.As(err, &ni):
		return p.result(abi.StatusNeedImages, 0, nil, nil, ni.Error())
	case errors.Is(err, ErrUnsupported):
		return p.result(abi.StatusUnsupported, 0, nil, nil, err.Error())
	}
	return p.result(abi.StatusPluginError, 0, nil, nil, err.Error())
}

func (p *Plugin) result(st abi.Status, flags uint32, meta, payload []byte, msg string) []byte {
	return p.resultState(st, flags|abi.ResultStateKeep, nil, meta, payload, msg)
}

func (p *Plugin) resultState(st abi.Status, flags uint32, state, meta, payload []byte, msg string) []byte {
	n := abi.ResultHeaderSize + len(state) + len(meta) + len(payload) + len(msg)
	if cap(p.res) < n {
		p.res = make([]byte, 0, n+n/2)
	}
	r := p.res[:abi.ResultHeaderSize]
	abi.PutResultHeader(r, st, flags, len(state), len(meta), len(payload), len(msg))
	r = append(r, state...)
	r = append(r, meta...)
	r = append(r, payload...)
	r = append(r, msg...)
	p.res = r
	return r
}

// AppendSSE appends one server-sent event ("event: name\n" when name is not
// empty, then "data: payload\n\n"). payload must not contain newlines, which
// holds for compact JSON.
func AppendSSE(dst []byte, name string, payload []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, '\n', '\n')
}
