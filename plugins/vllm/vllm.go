// Package vllm is MindRouter's backend adapter for vLLM's OpenAI-compatible
// server (vllm serve): it writes /v1/chat/completions requests, reads
// responses, SSE streams and errors back into the canonical schema, builds
// and reads the /tokenize calls of the gateway's exact token counts (ABI
// 2.7, tokenize.go), and parses the /v1/models, /health and /metrics
// probes.
//
// JSON is read with a fastjson.Parser held in the adapter and written with
// sdk/jsonw: no reflection on any path, as Go-compiled WebAssembly runs
// reflection-heavy code about ten times slower.
package vllm

import (
	"unsafe"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
	"github.com/valyala/fastjson"
)

// Manifest describes the plugin.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:    "vllm",
		Version: "0.1.0",
		Kind:    sdk.KindAdapter,
		Format:  "vllm",
		Framing: sdk.FramingSSE,
		Probes: []sdk.Probe{
			{Name: "models", Method: "GET", Path: "/v1/models"},
			{Name: "health", Method: "GET", Path: "/health"},
			{Name: "metrics", Method: "GET", Path: "/metrics"},
		},
		StateVersion: stateVersion,
	}
}

// Adapter implements sdk.Adapter for vLLM. One value serves one call at a
// time (as a wasm instance does); it keeps only reusable scratch buffers,
// never per-stream state.
type Adapter struct {
	sdk.Unimplemented

	p      fastjson.Parser
	w      jsonw.W
	calls  []toolSeen  // stream state, decoded afresh on every call
	thinks []thinkSeen // stream state: each choice's <think> splitter
	rbuf   []byte      // scratch: one delta's split reasoning and content
	cbuf   []byte
	sw     sdk.StateWriter

	// Allocation savers for stream chunks; never affect output.
	lastID, lastModel string
	// A stream call's chunks take their choices, tool call deltas and
	// strings from these, reused from call to call (the SDK consumes a
	// call's chunks before the adapter's next call): no allocation per
	// event once they have grown.
	choices []canon.ChunkChoice
	deltas  []canon.ToolCallDelta
	text    []byte
}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

var _ sdk.Adapter = (*Adapter)(nil)

// str returns b as a string in a.text, which lives until the adapter's
// next stream call (see Adapter.text).
func (a *Adapter) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	n := len(a.text)
	a.text = append(a.text, b...)
	return unsafe.String(&a.text[n], len(b))
}
