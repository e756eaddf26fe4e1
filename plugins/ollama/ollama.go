// Package ollama is MindRouter's backend adapter for Ollama's native API.
//
// It turns canonical chat requests into POST /api/chat bodies, Ollama's
// responses, NDJSON stream lines and error bodies back into canonical values,
// and parses the discovery probes GET /api/tags, /api/ps and /api/version,
// and POST /api/show once per model (its capabilities).
//
// JSON is read with one reused fastjson.Parser and written with append-style
// helpers from sdk/jsonw, because reflection-heavy encoding/json runs about
// ten times slower inside WebAssembly. An Adapter serves one call at a time
// and keeps no per-stream data between calls: a stream's progress travels in
// the host-owned state blob (see streamState).
package ollama

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/valyala/fastjson"
)

// stateVersion is the first field of every stream state blob this plugin
// writes; the manifest declares it so the host pins a stream to one layout.
// Version 2 adds the <think> splitter (stream.go); version 1 blobs are read.
const stateVersion = 2

// Manifest describes the adapter to the host.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:    "ollama",
		Version: "0.1.0",
		Kind:    sdk.KindAdapter,
		Format:  "ollama",
		Framing: sdk.FramingNDJSON,
		Probes: []sdk.Probe{
			{Name: probeModels, Method: "GET", Path: "/api/tags"},
			{Name: probeLoaded, Method: "GET", Path: "/api/ps"},
			{Name: probeHealth, Method: "GET", Path: "/api/version"},
			// One model's capabilities (vision, tools, ...): not in /api/tags.
			{Name: probeShow, Method: "POST", Path: "/api/show", Body: `{"model":{{model}}}`, PerModel: true},
		},
		StateVersion: stateVersion,
	}
}

// Adapter implements sdk.Adapter for Ollama. It holds reusable buffers, so
// one value must not serve two calls at once.
type Adapter struct {
	p       fastjson.Parser
	scratch []byte // compact JSON of one tool call's arguments
	state   []byte // the stream state blob being written
	rbuf    []byte // scratch: one line's reasoning and content, split
	cbuf    []byte
}

var _ sdk.Adapter = (*Adapter)(nil)

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }
