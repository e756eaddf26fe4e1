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

// Plugin dispatches ABI calls to a Translator or Adapter. The WebAssembly
// exports drive the registered Plugin; natively, the gateway's conformance
// kit and benchmarks drive one directly. Not safe for concurrent use: like a
// wasm instance, one Plugin serves one call at a time.
type Plugin struct {
	manifest Manifest
	t        Translator
	a        Adapter
	logf     func(level int, msg string)

	// Reused per call.
	call   Call
	out    Output
	state  State
	req    canon.ChatRequest
	resp   canon.ChatResponse
	cerr   canon.Error
	models canon.ModelList
	disc   canon.Discovery
	chunks []canon.ChatChunk
	events [][]byte
	list   []byte
	res    []byte
}

// NewTranslator returns a native Plugin serving t.
func NewTranslator(m Manifest, t Translator) *Plugin {
	m.Kind = KindTranslator
	return newPlugin(m, t, nil)
}

// NewAdapter returns a native Plugin serving a.
func NewAdapter(m Manifest, a Adapter) *Plugin {
	m.Kind = KindAdapter
	return newPlugin(m, nil, a)
}

func newPlugin(m Manifest, t Translator, a Adapter) *Plugin {
	m.ABI = abi.Version
	m.SDKVersion = Version
	m.GoVersion = runtime.Version()
	return &Plugin{manifest: m, t: t, a: a, logf: hostLog}
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
// manifest JSON. The result is valid until the next call.
func (p *Plugin) Init(config []byte) []byte {
	if c, ok := p.impl().(Configurable); ok && len(config) > 0 {
		if err := c.Configure(config); err != nil {
			return p.result(abi.StatusBadInput, 0, nil, nil, "configure: "+err.Error())
		}
	}
	// Cold path: encoding/json is fine here.
	m, err := json.Marshal(p.manifest)
	if err != nil {
		return p.result(abi.StatusPluginError, 0, nil, nil, "marshal manifest: "+err.Error())
	}
	return p.result(abi.StatusOK, 0, nil, m, "")
}

func (p *Plugin) impl() any {
	if p.t != nil {
		return p.t
	}
	return p.a
}

// Call runs one op on an input laid out as abi describes (call header then
// state, meta and payload) and returns the result area, valid until the next
// call. A panic in plugin code becomes StatusPluginError.
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

	err = p.dispatch(op, payload)
	if err != nil {
		return p.errorResult(err)
	}
	var flags uint32
	st := p.state.out
	if !p.state.set {
		flags |= abi.ResultStateKeep
		st = nil
	}
	if p.call.done {
		flags |= abi.ResultStreamDone
	}
	return p.resultState(abi.StatusOK, flags, st, p.out.meta, p.out.Body, "")
}

func (p *Plugin) dispatch(op abi.Op, payload []byte) error {
	c := &p.call
	if op < abi.OpRequestEncode && p.t == nil || op >= abi.OpRequestEncode && p.a == nil {
		return ErrUnsupported
	}
	switch op {
	case abi.OpRequestDecode:
		p.req = canon.ChatRequest{}
		if err := p.t.DecodeRequest(c, payload, &p.req); err != nil {
			return err
		}
		p.out.Body = p.req.AppendJSON(p.out.Body)
		p.out.SetMeta(abi.MetaModel, p.req.Model)
		p.out.SetMeta(abi.MetaStream, flag01(p.req.Stream))
		p.out.SetMeta(abi.MetaIncludeUsage, flag01(p.req.IncludeUsage))
		if p.req.MaxTokens > 0 {
			p.out.SetMeta(abi.MetaMaxTokens, strconv.Itoa(p.req.MaxTokens))
		}
	case abi.OpResponseEncode:
		if err := p.resp.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		return p.t.EncodeResponse(c, &p.resp, &p.out)
	case abi.OpStreamEncode:
		if err := p.decodeChunks(payload); err != nil {
			return err
		}
		return p.t.EncodeStream(c, &p.state, p.chunks, &p.out)
	case abi.OpErrorEncode:
		if err := p.cerr.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		return p.t.EncodeError(c, &p.cerr, &p.out)
	case abi.OpModelsEncode:
		if err := p.models.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		return p.t.EncodeModels(c, &p.models, &p.out)
	case abi.OpRequestEncode:
		if err := p.req.DecodeJSON(payload); err != nil {
			return BadInput(err.Error())
		}
		if v, ok := c.MetaBytes(abi.MetaContextLength); ok {
			if n, err := strconv.Atoi(string(v)); err == nil && n > 0 {
				p.req.ContextLength = n
			}
		}
		return p.a.EncodeRequest(c, &p.req, &p.out)
	case abi.OpResponseDecode:
		p.resp = canon.ChatResponse{}
		if err := p.a.DecodeResponse(c, payload, &p.resp); err != nil {
			return err
		}
		p.out.Body = p.resp.AppendJSON(p.out.Body)
		var fr canon.FinishReason
		if len(p.resp.Choices) > 0 {
			fr = p.resp.Choices[0].FinishReason
		}
		p.usageMeta(p.resp.Usage, fr)
	case abi.OpStreamDecode:
		return p.streamDecode(c, payload)
	case abi.OpErrorDecode:
		status, _ := strconv.Atoi(c.Meta(abi.MetaStatus))
		p.cerr = canon.Error{}
		if err := p.a.DecodeError(c, status, payload, &p.cerr); err != nil {
			return err
		}
		p.out.Body = p.cerr.AppendJSON(p.out.Body)
	case abi.OpProbeDecode:
		p.disc = canon.Discovery{}
		if err := p.a.DecodeProbe(c, c.Meta(abi.MetaProbe), payload, &p.disc); err != nil {
			return err
		}
		p.out.Body = p.disc.AppendJSON(p.out.Body)
	default:
		return ErrUnsupported
	}
	return nil
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

func (p *Plugin) streamDecode(c *Call, list []byte) error {
	p.events = p.events[:0]
	for {
		item, rest, ok, err := abi.NextItem(list)
		if err != nil {
			return BadInput("event list: " + err.Error())
		}
		if !ok {
			break
		}
		p.events = append(p.events, item)
		list = rest
	}
	p.chunks = p.chunks[:0]
	if err := p.a.DecodeStream(c, &p.state, p.events, &p.chunks); err != nil {
		return err
	}
	var usage *canon.Usage
	var fr canon.FinishReason
	p.list = p.list[:0]
	for i := range p.chunks {
		if u := p.chunks[i].Usage; u != nil {
			usage = u
		}
		for j := range p.chunks[i].Choices {
			if f := p.chunks[i].Choices[j].FinishReason; f != "" && p.chunks[i].Choices[j].Index == 0 {
				fr = f
			}
		}
		n := len(p.list)
		p.list = append(p.list, 0, 0, 0, 0)
		p.list = p.chunks[i].AppendJSON(p.list)
		putU32(p.list[n:], uint32(len(p.list)-n-4))
	}
	p.out.Body = append(p.out.Body, p.list...)
	p.usageMeta(usage, fr)
	return nil
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
	switch {
	case errors.As(err, &in):
		return p.result(abi.StatusBadInput, 0, nil, nil, in.Msg)
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
