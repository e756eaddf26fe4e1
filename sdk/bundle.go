package sdk

import (
	"encoding/binary"
	"strconv"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Component is one translator or adapter of a module, with its own
// manifest. Make one with TranslatorPart or AdapterPart.
type Component struct {
	m       Manifest
	t       Translator
	a       Adapter
	patches []namedPatch // a translator's same-dialect patches (Patch)
}

// TranslatorPart makes t a component of a bundle, described by m (its Kind
// is set to KindTranslator; the SDK fills the versions).
func TranslatorPart(m Manifest, t Translator) Component {
	m.Kind = KindTranslator
	stamp(&m)
	return Component{m: m, t: t}
}

// AdapterPart makes a a component of a bundle, described by m (its Kind is
// set to KindAdapter; the SDK fills the versions, and CountsTokens from
// whether a implements TokenCountAdapter).
func AdapterPart(m Manifest, a Adapter) Component {
	m.Kind = KindAdapter
	_, m.CountsTokens = a.(TokenCountAdapter)
	stamp(&m)
	return Component{m: m, a: a}
}

// Manifest returns the component's manifest.
func (c Component) Manifest() Manifest { return c.m }

func (c *Component) impl() any {
	if c.t != nil {
		return c.t
	}
	return c.a
}

// NewBundle returns a native Plugin serving parts as one module: component
// i is parts[i], the index the host puts in the call header. Its manifest
// has Kind KindBundle, the name and version given, and the parts'
// manifests in Components. It panics when parts is empty or longer than a
// header index can address, or when two parts share a name.
func NewBundle(name, version string, parts ...Component) *Plugin {
	if len(parts) == 0 || len(parts) > 1<<16 {
		panic("sdk: a bundle needs 1 to 65536 components, got " + strconv.Itoa(len(parts)))
	}
	m := Manifest{Name: name, Version: version, Kind: KindBundle}
	stamp(&m)
	seen := make(map[string]bool, len(parts))
	for i := range parts {
		if seen[parts[i].m.Name] {
			panic("sdk: bundle " + name + ": two components named " + strconv.Quote(parts[i].m.Name))
		}
		seen[parts[i].m.Name] = true
		m.Components = append(m.Components, parts[i].m)
	}
	return &Plugin{manifest: m, parts: append([]Component(nil), parts...), patches: resolvePatches(name, parts), logf: hostLog}
}

// componentError is a call naming a component the module lacks, or one of
// the wrong kind: StatusUnsupported with a message saying which.
type componentError struct{ msg string }

func (e *componentError) Error() string        { return e.msg }
func (e *componentError) Is(target error) bool { return target == ErrUnsupported }

func (p *Plugin) component(op abi.Op, role string, i uint16) (*Component, error) {
	if int(i) >= len(p.parts) {
		return nil, &componentError{"sdk: " + op.String() + " names " + role + " component " + strconv.Itoa(int(i)) +
			"; this module has " + strconv.Itoa(len(p.parts))}
	}
	return &p.parts[i], nil
}

func (p *Plugin) wrongKind(op abi.Op, role string, i uint16) error {
	c := &p.parts[i]
	kind := "empty"
	switch {
	case c.t != nil:
		kind = "a translator"
	case c.a != nil:
		kind = "an adapter"
	}
	return &componentError{"sdk: " + op.String() + " needs " + role + "; component " + strconv.Itoa(int(i)) +
		" (" + c.m.Name + ") is " + kind}
}

// translator returns the translator at header index i.
func (p *Plugin) translator(op abi.Op, i uint16) (Translator, error) {
	c, err := p.component(op, "translator", i)
	if err != nil {
		return nil, err
	}
	if c.t == nil {
		return nil, p.wrongKind(op, "a translator", i)
	}
	return c.t, nil
}

// adapter returns the adapter at header index i.
func (p *Plugin) adapter(op abi.Op, i uint16) (Adapter, error) {
	c, err := p.component(op, "adapter", i)
	if err != nil {
		return nil, err
	}
	if c.a == nil {
		return nil, p.wrongKind(op, "an adapter", i)
	}
	return c.a, nil
}

// dispatchFused runs a fused op: the header's translator and adapter in
// one call, with the canonical value passed between them as Go values.
// Each half sees the Call (Op, Flags, meta) the unfused host would give it.
func (p *Plugin) dispatchFused(op abi.Op, h *abi.Header, state, meta, payload []byte) error {
	t, err := p.translator(op, h.Translator)
	if err != nil {
		return err
	}
	a, err := p.adapter(op, h.Adapter)
	if err != nil {
		return err
	}
	c := &p.call
	pt := p.patchFor(h.Translator, h.Adapter)
	switch op {
	case abi.OpFusedRequest:
		// A patch rewrites the client's body as is; an output cap and a
		// capability check need the canonical request, so a capped
		// request, or one for a model without vision or tools, takes the
		// full path.
		if pt != nil && patchable(meta) {
			*c = Call{Op: op, Flags: h.Flags, RequestID: h.RequestID, meta: meta, plugin: p}
			if p.patchRequest(pt, c, payload) {
				return nil
			}
		}
		// request_decode gets the route and kind; request_encode only the
		// context length and the images the host fetched.
		p.tmeta = filterMeta(p.tmeta[:0], meta, false)
		p.ameta = filterMeta(p.ameta[:0], meta, true)
		*c = Call{Op: abi.OpRequestDecode, Flags: h.Flags, RequestID: h.RequestID, meta: p.tmeta, plugin: p}
		if err := p.decodeRequest(t, c, payload); err != nil {
			return err
		}
		*c = Call{Op: abi.OpRequestEncode, Flags: h.Flags, RequestID: h.RequestID, meta: p.ameta, plugin: p}
		p.hostHints(c)
		if err := p.modelCaps(c); err != nil {
			return err
		}
		return a.EncodeRequest(c, &p.req, &p.out)
	case abi.OpFusedResponse:
		if pt != nil {
			*c = Call{Op: op, Flags: h.Flags, RequestID: h.RequestID, meta: meta, plugin: p}
			if p.patchResponse(pt, c, payload) {
				return nil
			}
		}
		*c = Call{Op: abi.OpResponseDecode, Flags: h.Flags, RequestID: h.RequestID, plugin: p}
		if err := p.decodeResponse(a, c, payload); err != nil {
			return err
		}
		p.responseMeta()
		*c = Call{Op: abi.OpResponseEncode, Flags: h.Flags, RequestID: h.RequestID, meta: meta, plugin: p}
		return t.EncodeResponse(c, &p.resp, &p.out)
	default: // abi.OpFusedStream
		return p.fusedStream(t, a, pt, h, state, meta, payload)
	}
}

// Fused stream state: the SDK's layout of the state blob of OpFusedStream,
// which holds both components' blobs.
//
//	byte     fusedStateVersion (1)
//	byte     flags: fusedTranslatorStarted once the translator has been called
//	uvarint  length of the adapter's blob
//	[]byte   the adapter's blob
//	[]byte   the translator's blob (the rest)
//
// An empty blob is a stream's start: both components' blobs empty, the
// translator not called yet.
const (
	fusedStateVersion      = 1
	fusedTranslatorStarted = 1 << 0
)

// fusedState is a parsed fused state blob; its slices alias the blob.
type fusedState struct {
	started    bool
	adapter    []byte
	translator []byte
}

func (s *fusedState) parse(b []byte) error {
	*s = fusedState{}
	if len(b) == 0 {
		return nil
	}
	if len(b) < 3 || b[0] != fusedStateVersion || b[1]&^fusedTranslatorStarted != 0 {
		return ErrState
	}
	n, k := binary.Uvarint(b[2:])
	if k <= 0 || n > uint64(len(b)-2-k) {
		return ErrState
	}
	rest := b[2+k:]
	s.started = b[1]&fusedTranslatorStarted != 0
	s.adapter, s.translator = rest[:n:n], rest[n:]
	return nil
}

func appendFusedState(dst []byte, started bool, adapter, translator []byte) []byte {
	var flags byte
	if started {
		flags |= fusedTranslatorStarted
	}
	dst = append(dst, fusedStateVersion, flags)
	dst = binary.AppendUvarint(dst, uint64(len(adapter)))
	dst = append(dst, adapter...)
	return append(dst, translator...)
}

// fusedStream runs OpFusedStream as the host runs the unfused pair (its
// relay step): stream_decode with the call's flags, then stream_encode only
// when the batch gave chunks or this is the end call, with FlagFirst on the
// translator's first call (which may come after the adapter's first).
func (p *Plugin) fusedStream(t Translator, a Adapter, pt Patch, h *abi.Header, state, meta, payload []byte) error {
	var fs fusedState
	if err := fs.parse(state); err != nil {
		return BadInput("fused stream state: " + err.Error())
	}
	if err := p.splitEvents(payload); err != nil {
		return err
	}
	c := &p.call
	started := fs.started
	if pt != nil {
		*c = Call{Op: abi.OpFusedStream, Flags: h.Flags, RequestID: h.RequestID, meta: meta, plugin: p}
		if p.patchStream(pt, c, &fs, p.events, &started) {
			p.commitFusedState(&fs, started)
			return nil
		}
	}
	*c = Call{Op: abi.OpStreamDecode, Flags: h.Flags, RequestID: h.RequestID, plugin: p}
	p.state.In, p.state.out, p.state.set = fs.adapter, p.state.out[:0], false
	p.chunks = p.chunks[:0]
	if err := a.DecodeStream(c, &p.state, p.events, &p.chunks); err != nil {
		return err
	}
	done := c.done
	p.streamMeta()

	p.tstate.In, p.tstate.out, p.tstate.set = fs.translator, p.tstate.out[:0], false
	if len(p.chunks) > 0 || h.Flags&abi.FlagEnd != 0 {
		flags := h.Flags &^ abi.FlagFirst
		if !started {
			flags |= abi.FlagFirst
		}
		*c = Call{Op: abi.OpStreamEncode, Flags: flags, RequestID: h.RequestID, meta: meta, plugin: p}
		if err := t.EncodeStream(c, &p.tstate, p.chunks, &p.out); err != nil {
			return err
		}
		started = true
	}
	c.done = done
	p.commitFusedState(&fs, started)
	return nil
}

// commitFusedState makes the fused state blob of a stream call whose
// components' states are p.state and p.tstate, when anything changed.
func (p *Plugin) commitFusedState(fs *fusedState, started bool) {
	if p.state.set || p.tstate.set || started != fs.started {
		as, ts := fs.adapter, fs.translator
		if p.state.set {
			as = p.state.out
		}
		if p.tstate.set {
			ts = p.tstate.out
		}
		p.fstate = appendFusedState(p.fstate[:0], started, as, ts)
		p.fset = true
	}
}

// patchable reports whether a fused request's meta lets the patch path
// take it: no output cap, and model caps (when known) with both vision
// and tools, so the SDK has nothing to refuse.
func patchable(meta []byte) bool {
	if _, capped := abi.MetaGet(meta, abi.MetaMaxOutput); capped {
		return false
	}
	caps, ok := abi.MetaGet(meta, abi.MetaModelCaps)
	return !ok || hasCap(caps, canon.CapVision) && hasCap(caps, canon.CapTools)
}

// adapterMeta reports whether a fused request's meta key is for the
// adapter's request_encode rather than the translator's request_decode.
func adapterMeta(key string) bool {
	return key == abi.MetaContextLength || key == abi.MetaImage || key == abi.MetaMaxOutput || key == abi.MetaModelCaps ||
		key == abi.MetaThinkDefault
}

// filterMeta appends to dst the pairs of meta whose key is the adapter's
// (keep) or is not (!keep). A malformed list appends what precedes the
// fault.

func filterMeta(dst, meta []byte, keep bool) []byte {
	for len(meta) > 0 {
		k, _, rest, err := abi.NextMeta(meta)
		if err != nil {
			break
		}
		if adapterMeta(string(k)) == keep {
			dst = append(dst, meta[:len(meta)-len(rest)]...)
		}
		meta = rest
	}
	return dst
}
