package sdktest

import (
	"bytes"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// FuzzOp fuzzes op on p: every input must come back ok or bad_input (and
// need_images for request_encode and fused_request), never plugin_error
// (a panic or a bug) or unsupported, and the same input twice must give
// the same result. Seeds are payloads; for the stream ops (whose payload
// is a list) an input is split at newlines into items, so a seed is its
// items joined by "\n". The fuzzer also varies the call flags and the
// state blob, which a plugin must treat as untrusted (a blob from another
// version, a corrupt one: bad_input). Call it from a Fuzz function:
//
//	func FuzzDecodeRequest(f *testing.F) {
//		sdktest.FuzzOp(f, newPlugin(), abi.OpRequestDecode, []byte(`{"model":"m","prompt":"hi"}`))
//	}
func FuzzOp(f *testing.F, p *sdk.Plugin, op abi.Op, seeds ...[]byte) {
	f.Helper()
	New(f, p).Fuzz(f, op, seeds...)
}

// Fuzz is FuzzOp on h's plugin, with its component indexes and opts
// (meta, say) on every call.
func (h *Harness) Fuzz(f *testing.F, op abi.Op, seeds ...[]byte) {
	h.FuzzWith(f, op, nil, seeds...)
}

// FuzzWith is Fuzz with opts added to every call.
func (h *Harness) FuzzWith(f *testing.F, op abi.Op, opts []Option, seeds ...[]byte) {
	f.Helper()
	list := op == abi.OpStreamEncode || op == abi.OpStreamDecode || op == abi.OpFusedStream
	for _, s := range seeds {
		f.Add(s, []byte(nil), uint8(abi.FlagFirst|abi.FlagEnd))
		if list {
			f.Add(s, []byte(nil), uint8(abi.FlagFirst))
		}
	}
	f.Fuzz(func(t *testing.T, payload, state []byte, flags uint8) {
		fh := &Harness{tb: t, p: h.p, m: h.m, Translator: h.Translator, Adapter: h.Adapter}
		fh.fuzzOne(op, opts, payload, state, flags)
	})
}

// fuzzOne makes one fuzz call and checks its result.
func (h *Harness) fuzzOne(op abi.Op, opts []Option, payload, state []byte, flags uint8) {
	h.tb.Helper()
	in := append(opts[:len(opts):len(opts)], Payload(payload), State(state), Flags(uint32(flags&3)))
	if op == abi.OpStreamEncode || op == abi.OpStreamDecode || op == abi.OpFusedStream {
		in[len(in)-3] = Items(bytes.Split(payload, []byte("\n"))...)
	}
	r := h.Call(op, in...)
	switch r.Status {
	case abi.StatusOK, abi.StatusBadInput:
	case abi.StatusNeedImages:
		if op != abi.OpRequestEncode && op != abi.OpFusedRequest {
			h.tb.Fatalf("%s: need_images from an op that cannot ask for images: %s", op, r.Error)
		}
	default:
		h.tb.Fatalf("%s: status %s: %s\ninput: %q", op, r.Status, r.Error, payload)
	}
	if r.Status != abi.StatusOK && r.Error == "" {
		h.tb.Fatalf("%s: status %s without a message", op, r.Status)
	}
	again := h.Call(op, in...)
	if again.Status != r.Status || again.Error != r.Error || !bytes.Equal(again.Payload, r.Payload) ||
		!bytes.Equal(again.RawMeta, r.RawMeta) || !bytes.Equal(again.State, r.State) || again.Flags != r.Flags {
		h.tb.Fatalf("%s: the same input twice gave different results:\n%+v\n%+v", op, r, again)
	}
}
