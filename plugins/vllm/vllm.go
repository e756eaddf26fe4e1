// Package vllm is MindRouter's backend adapter for vLLM's OpenAI-compatible
// server (vllm serve): it writes /v1/chat/completions requests, reads
// responses, SSE streams and errors back into the canonical schema, and
// parses the /v1/models, /health and /metrics probes.
//
// JSON is read with a fastjson.Parser held in the adapter and written with
// sdk/jsonw: no reflection on any path, as Go-compiled WebAssembly runs
// reflection-heavy code about ten times slower.
package vllm

import (
	"github.com/mindrouter/mindrouter/sdk"
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

	p     fastjson.Parser
	w     jsonw.W
	calls []toolSeen // stream state, decoded afresh on every call
	sw    sdk.StateWriter

	// Allocation savers for stream chunks; never affect output.
	lastID, lastModel string
}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

var _ sdk.Adapter = (*Adapter)(nil)
