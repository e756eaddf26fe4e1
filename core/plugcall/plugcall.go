// Package plugcall is the typed layer between the gateway and the plugin
// ABI: one method per op, taking and returning Go values, so the request
// pipeline never builds or parses ABI metadata itself. A Calls value holds
// the reusable buffers of one request (it is pooled with the request's
// exchange); its results alias those buffers and are valid until the next
// call of the same kind.
package plugcall

import (
	"context"
	"strconv"

	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Calls makes the plugin calls of one request.
type Calls struct {
	RequestID uint64 // for plugin log correlation
	Route     string // route name, sent as meta to translator ops
	Kind      string // endpoint kind, sent as meta to translator ops
	// T and A are the component indexes of the translator and the adapter
	// in their modules (0 for a module of one component).
	T, A uint16
	// Images are abi.MetaImage pairs the host fetched after an adapter
	// answered need_images; the request calls pass them on (ABI 2.2).
	Images []byte
	// Extra are meta pairs every translator op of the request gets beyond
	// route and kind: a template route's captures and query string (ABI
	// 2.8, abi.MetaCapturePrefix, abi.MetaQuery). The caller fills it
	// after Reset.
	Extra []byte

	meta []byte
	// echo is the translator's note for the answer (abi.MetaEcho, 2.9)
	// and dropped the tools it did not offer the model
	// (abi.MetaDroppedTools), copied from the request's decode.
	echo, dropped []byte
	t, a          pluginhost.Result

	// Shaped reports that the last FusedResponse was translated by a
	// response shape, without a call (answer.go).
	Shaped               bool
	key, idBuf, shapeOut []byte
}

// DroppedTools is what the request's decode named as the client's tools
// it did not offer the model (comma-separated; empty for none).
func (c *Calls) DroppedTools() []byte { return c.dropped }

// noteDecode keeps what a request decode's meta m leaves for the answer.
func (c *Calls) noteDecode(m []byte) {
	e, _ := abi.MetaGet(m, abi.MetaEcho)
	if len(e) > abi.MaxEchoBytes {
		e = nil
	}
	c.echo = append(c.echo[:0], e...)
	d, _ := abi.MetaGet(m, abi.MetaDroppedTools)
	c.dropped = append(c.dropped[:0], d...)
}

// appendEcho appends the request's note, when it has one.
func (c *Calls) appendEcho(m []byte) []byte {
	if len(c.echo) == 0 {
		return m
	}
	return abi.AppendMetaBytes(m, abi.MetaEcho, c.echo)
}

// Reset readies c for another request.
func (c *Calls) Reset(requestID uint64, route, kind string) {
	c.RequestID, c.Route, c.Kind = requestID, route, kind
	c.T, c.A = 0, 0
	c.Shaped = false
	c.Images = c.Images[:0]
	c.Extra = c.Extra[:0]
	c.echo, c.dropped = c.echo[:0], c.dropped[:0]
}

func (c *Calls) routeMeta() []byte {
	c.meta = abi.AppendMeta(c.meta[:0], abi.MetaRoute, c.Route)
	c.meta = abi.AppendMeta(c.meta, abi.MetaKind, c.Kind)
	c.meta = append(c.meta, c.Extra...)
	return c.meta
}

// Request is what the translator reports about a decoded request: the
// fields the gateway routes, schedules and accounts on.
type Request struct {
	Model        string
	Stream       bool
	IncludeUsage bool
	MaxTokens    int // 0: not set
	// Choices is how many sequences the request generates (n, times the
	// prompts of a text completion); 0 or 1: one. The fused request op
	// leaves it as the routing fields had it.
	Choices   int
	Canonical []byte // canonical request JSON (aliases the call buffers)
}

// DecodeRequest runs the translator's request_decode op.
func (c *Calls) DecodeRequest(ctx context.Context, t *pluginhost.Version, body []byte, r *Request) error {
	if err := t.Call(ctx, abi.OpRequestDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.routeMeta(), Payload: body}, &c.t); err != nil {
		return err
	}
	m := c.t.Meta
	r.Model = metaString(m, abi.MetaModel)
	r.Stream = metaFlag(m, abi.MetaStream)
	r.IncludeUsage = metaFlag(m, abi.MetaIncludeUsage)
	r.MaxTokens = metaInt(m, abi.MetaMaxTokens)
	r.Choices = metaInt(m, abi.MetaChoices)
	r.Canonical = c.t.Payload
	c.noteDecode(m)
	return nil
}

// BackendRequest is what an adapter wants sent to its backend.
type BackendRequest struct {
	Method, Path, ContentType string
	Body                      []byte // aliases the call buffers
}

// Hints are what the host tells an adapter about a request beyond the
// canonical body: the model's context window on the chosen backend and
// the output cap from the user's token budget (0: unknown / none), and
// the model's capabilities there (nil: unknown; abi.MetaModelCaps, 2.4).
type Hints struct {
	ContextLength int
	MaxOutput     int
	// Caps is discovery's list as is (canon.DiscoveredModel.Capabilities,
	// shared and read only): appendHints joins it straight into the meta
	// buffer, so a request allocates nothing for it.
	Caps []string
	// ThinkDefault is the operator's thinking default for the model
	// (abi.MetaThinkDefault): "off", "on", or "" for the model's own.
	ThinkDefault string
}

// appendHints appends h's meta to m.
func appendHints(m []byte, h Hints) []byte {
	var b [20]byte
	if h.ContextLength > 0 {
		m = abi.AppendMetaBytes(m, abi.MetaContextLength, strconv.AppendInt(b[:0], int64(h.ContextLength), 10))
	}
	if h.MaxOutput > 0 {
		m = abi.AppendMetaBytes(m, abi.MetaMaxOutput, strconv.AppendInt(b[:0], int64(h.MaxOutput), 10))
	}
	if len(h.Caps) > 0 {
		m = abi.AppendMetaList(m, abi.MetaModelCaps, h.Caps) // joined in place
	}
	if h.ThinkDefault != "" {
		m = abi.AppendMeta(m, abi.MetaThinkDefault, h.ThinkDefault)
	}
	return m
}

// EncodeRequest runs the adapter's request_encode op with the host's hints.
func (c *Calls) EncodeRequest(ctx context.Context, a *pluginhost.Version, canonical []byte, h Hints, r *BackendRequest) error {
	c.meta = appendHints(c.meta[:0], h)
	c.meta = append(c.meta, c.Images...)
	if err := a.Call(ctx, abi.OpRequestEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.meta, Payload: canonical}, &c.a); err != nil {
		return err
	}
	m := c.a.Meta
	r.Method = metaConst(m, abi.MetaMethod, "POST")
	r.Path = metaConst(m, abi.MetaPath, "/")
	r.ContentType = metaConst(m, abi.MetaContentType, "application/json")
	r.Body = c.a.Payload
	return nil
}

// Decoded is a backend answer in canonical form, with the usage the
// adapter saw.
type Decoded struct {
	Canonical    []byte // canonical JSON (aliases the call buffers)
	Usage        outcome.Usage
	FinishReason string
	Done         bool // stream: the backend signalled the end
	// OutputTokens is the adapter's estimate of the output in the answer
	// or batch (abi.MetaOutputTokens), for an answer without usage.
	OutputTokens int
	// Shape is the stream shape a fused stream call left
	// (abi.MetaStreamShape, aliasing the call buffers), nil for none.
	Shape []byte
}

// DecodeResponse runs the adapter's response_decode op.
func (c *Calls) DecodeResponse(ctx context.Context, a *pluginhost.Version, body []byte, d *Decoded) error {
	if err := a.Call(ctx, abi.OpResponseDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Payload: body}, &c.a); err != nil {
		return err
	}
	c.decoded(d)
	return nil
}

// DecodeStream runs the adapter's stream_decode op on a list of framed
// events. state is the stream's state blob, replaced in place.
func (c *Calls) DecodeStream(ctx context.Context, a *pluginhost.Version, flags uint32, state *[]byte, events []byte, d *Decoded) error {
	if err := a.Call(ctx, abi.OpStreamDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Flags: flags, State: *state, Payload: events}, &c.a); err != nil {
		return err
	}
	*state = append((*state)[:0], c.a.State...)
	c.decoded(d)
	d.Done = c.a.Flags&abi.ResultStreamDone != 0
	return nil
}

func (c *Calls) decoded(d *Decoded) {
	m := c.a.Meta
	d.Canonical = c.a.Payload
	d.Done = false
	if v, ok := abi.MetaGet(m, abi.MetaPromptTokens); ok {
		d.Usage = outcome.Usage{
			Prompt:     atoi(v),
			Completion: metaInt(m, abi.MetaCompletionTokens),
			Reasoning:  metaInt(m, abi.MetaReasoningTokens),
			Cached:     metaInt(m, abi.MetaCachedTokens),
			Reported:   true,
		}
	} else {
		d.Usage = outcome.Usage{}
	}
	d.FinishReason = metaConst(m, abi.MetaFinishReason, "")
	d.OutputTokens = metaInt(m, abi.MetaOutputTokens)
	d.Shape = nil
}

// Header is the gateway's identity of a response, repeated by the
// translator in the client's format.
type Header struct {
	ID           string
	Model        string
	Created      int64
	IncludeUsage bool
}

// Encoded is a translator's output.
type Encoded struct {
	Body        []byte // aliases the call buffers
	ContentType string // "" when the plugin set none
}

func (c *Calls) headerMeta(h *Header) []byte {
	m := c.routeMeta()
	m = abi.AppendMeta(m, abi.MetaID, h.ID)
	m = abi.AppendMeta(m, abi.MetaModel, h.Model)
	var b [20]byte
	m = abi.AppendMetaBytes(m, abi.MetaCreated, strconv.AppendInt(b[:0], h.Created, 10))
	if h.IncludeUsage {
		m = abi.AppendMeta(m, abi.MetaIncludeUsage, "1")
	}
	m = c.appendEcho(m)
	c.meta = m
	return m
}

// EncodeResponse runs the translator's response_encode op.
func (c *Calls) EncodeResponse(ctx context.Context, t *pluginhost.Version, h *Header, canonical []byte, e *Encoded) error {
	if err := t.Call(ctx, abi.OpResponseEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.headerMeta(h), Payload: canonical}, &c.t); err != nil {
		return err
	}
	e.Body, e.ContentType = c.t.Payload, metaConst(c.t.Meta, abi.MetaContentType, "")
	return nil
}

// StreamMeta prepares the metadata of a stream's encode calls once; pass
// the result to EncodeStream.
func (c *Calls) StreamMeta(h *Header, dst []byte) []byte {
	return append(dst[:0], c.headerMeta(h)...)
}

// EncodeStream runs the translator's stream_encode op on a list of
// canonical chunks. meta comes from StreamMeta; state is replaced in place.
func (c *Calls) EncodeStream(ctx context.Context, t *pluginhost.Version, flags uint32, meta []byte, state *[]byte, chunks []byte) ([]byte, error) {
	if err := t.Call(ctx, abi.OpStreamEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Flags: flags, State: *state, Meta: meta, Payload: chunks}, &c.t); err != nil {
		return nil, err
	}
	*state = append((*state)[:0], c.t.State...)
	return c.t.Payload, nil
}

// EncodedError is a translator's rendering of an error.
type EncodedError struct {
	Body        []byte
	ContentType string
	Status      int // 0: keep the gateway's
}

// EncodeError runs the translator's error_encode op on a canonical error.
// With stream, the body ends an open stream and comes framed.
func (c *Calls) EncodeError(ctx context.Context, t *pluginhost.Version, e *canon.Error, stream bool, scratch []byte, out *EncodedError) error {
	return c.EncodeStreamError(ctx, t, e, stream, nil, scratch, out)
}

// EncodeStreamError is EncodeError given the translator's stream state
// (ABI 2.5): a translator whose last event depends on the stream so far
// (OpenAI Responses' response.failed: the next sequence number, the
// output so far) reads it; others ignore it.
func (c *Calls) EncodeStreamError(ctx context.Context, t *pluginhost.Version, e *canon.Error, stream bool, state, scratch []byte, out *EncodedError) error {
	m := c.routeMeta()
	if stream {
		m = abi.AppendMeta(m, abi.MetaStream, "1")
		m = c.appendEcho(m) // the terminal event repeats the request
	}
	c.meta = m
	if err := t.Call(ctx, abi.OpErrorEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, State: state, Meta: m, Payload: e.AppendJSON(scratch[:0])}, &c.t); err != nil {
		return err
	}
	out.Body, out.ContentType = c.t.Payload, metaConst(c.t.Meta, abi.MetaContentType, "")
	out.Status = 0
	if n := metaInt(c.t.Meta, abi.MetaStatus); n >= 400 && n < 600 {
		out.Status = n
	}
	return nil
}

// DecodeError runs the adapter's error_decode op on a backend's error
// response.
func (c *Calls) DecodeError(ctx context.Context, a *pluginhost.Version, status int, body []byte, e *canon.Error) error {
	var b [8]byte
	c.meta = abi.AppendMetaBytes(c.meta[:0], abi.MetaStatus, strconv.AppendInt(b[:0], int64(status), 10))
	if err := a.Call(ctx, abi.OpErrorDecode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.meta, Payload: body}, &c.a); err != nil {
		return err
	}
	*e = canon.Error{}
	return e.DecodeJSON(c.a.Payload)
}

// EncodeModels runs the translator's models_encode op.
func (c *Calls) EncodeModels(ctx context.Context, t *pluginhost.Version, model string, list []byte, e *Encoded) error {
	m := c.routeMeta()
	if model != "" { // a one-model route (ABI 2.2): list holds that model
		m = abi.AppendMeta(m, abi.MetaModel, model)
		c.meta = m
	}
	if err := t.Call(ctx, abi.OpModelsEncode, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: m, Payload: list}, &c.t); err != nil {
		return err
	}
	e.Body, e.ContentType = c.t.Payload, metaConst(c.t.Meta, abi.MetaContentType, "")
	return nil
}

// FusedRequest runs the fused request op of a module holding both the
// translator (c.T) and the adapter (c.A): client body → backend body in
// one call. r gets the translator's routing fields, br the backend request.
func (c *Calls) FusedRequest(ctx context.Context, v *pluginhost.Version, body []byte, h Hints, r *Request, br *BackendRequest) error {
	m := appendHints(c.routeMeta(), h)
	m = append(m, c.Images...)
	c.meta = m
	if err := v.Call(ctx, abi.OpFusedRequest, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: m, Payload: body}, &c.t); err != nil {
		return err
	}
	m = c.t.Meta
	r.Model = metaString(m, abi.MetaModel)
	r.Stream = metaFlag(m, abi.MetaStream)
	r.IncludeUsage = metaFlag(m, abi.MetaIncludeUsage)
	r.MaxTokens = metaInt(m, abi.MetaMaxTokens)
	r.Canonical = nil
	c.noteDecode(m)
	br.Method = metaConst(m, abi.MetaMethod, "POST")
	br.Path = metaConst(m, abi.MetaPath, "/")
	br.ContentType = metaConst(m, abi.MetaContentType, "application/json")
	br.Body = c.t.Payload
	return nil
}

// FusedResponse runs the fused response op: backend body → client body.
func (c *Calls) FusedResponse(ctx context.Context, v *pluginhost.Version, h *Header, body []byte, d *Decoded, e *Encoded) error {
	c.Shaped = false
	key := c.answerKey(h)
	if c.shapedResponse(v, key, h, body, d, e) {
		return nil
	}
	if err := v.Call(ctx, abi.OpFusedResponse, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Meta: c.headerMeta(h), Payload: body}, &c.a); err != nil {
		return err
	}
	c.decoded(d)
	d.Canonical = nil
	e.Body, e.ContentType = c.a.Payload, metaConst(c.a.Meta, abi.MetaContentType, "")
	c.keepAnswer(v, key)
	return nil
}

// FusedStream runs the fused stream op on a list of framed backend events
// and returns the client bytes. meta comes from StreamMeta; state (both
// components' blobs) is replaced in place; d.Shape is the stream shape
// the call left, if any.
func (c *Calls) FusedStream(ctx context.Context, v *pluginhost.Version, flags uint32, meta []byte, state *[]byte, events []byte, d *Decoded) ([]byte, error) {
	if err := v.Call(ctx, abi.OpFusedStream, pluginhost.CallInput{RequestID: c.RequestID, Translator: c.T, Adapter: c.A, Flags: flags, State: *state, Meta: meta, Payload: events}, &c.a); err != nil {
		return nil, err
	}
	*state = append((*state)[:0], c.a.State...)
	c.decoded(d)
	d.Canonical = nil
	d.Done = c.a.Flags&abi.ResultStreamDone != 0
	d.Shape, _ = abi.MetaGet(c.a.Meta, abi.MetaStreamShape)
	return c.a.Payload, nil
}

// DecodeProbe runs an adapter's probe_decode op for the probe named probe
// that answered HTTP status with body.
func DecodeProbe(ctx context.Context, a *pluginhost.Version, probe string, status int, body []byte, res *pluginhost.Result, d *canon.Discovery) error {
	var b [8]byte
	meta := abi.AppendMeta(nil, abi.MetaProbe, probe)
	meta = abi.AppendMetaBytes(meta, abi.MetaStatus, strconv.AppendInt(b[:0], int64(status), 10))
	if err := a.Call(ctx, abi.OpProbeDecode, pluginhost.CallInput{Meta: meta, Payload: body}, res); err != nil {
		return err
	}
	*d = canon.Discovery{}
	return d.DecodeJSON(res.Payload)
}

func metaString(m []byte, key string) string {
	v, _ := abi.MetaGet(m, key)
	return string(v)
}

func metaFlag(m []byte, key string) bool {
	v, _ := abi.MetaGet(m, key)
	return len(v) == 1 && v[0] == '1'
}

func metaInt(m []byte, key string) int {
	v, _ := abi.MetaGet(m, key)
	return atoi(v)
}

func atoi(v []byte) int {
	n := 0
	if len(v) == 0 || len(v) > 12 {
		return 0
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// metaConst returns the value of key without allocating for the values
// plugins commonly send, else a copy, else def.
func metaConst(m []byte, key, def string) string {
	v, ok := abi.MetaGet(m, key)
	if !ok || len(v) == 0 {
		return def
	}
	for _, s := range common {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}

var common = [...]string{"POST", "GET", "application/json", "application/x-ndjson", "text/event-stream",
	"/v1/chat/completions", "/api/chat", "/tokenize", "stop", "length", "tool_calls", "content_filter"}
