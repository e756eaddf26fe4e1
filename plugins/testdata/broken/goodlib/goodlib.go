// Package goodlib is a small, well-behaved translator used by the plugin
// host's tests and benchmarks, natively and as WebAssembly (command good).
// Build the command twice with different
// -ldflags "-X github.com/mindrouter/mindrouter/plugins/testdata/broken/goodlib.Version=..."
// to get two distinct, valid builds.
package goodlib

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"strconv"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Version is reported in the manifest and in every error body.
var Version = "dev"

type translator struct {
	sdk.Unimplemented
	prefix string
}

// Configure takes {"prefix":"..."} (hand-parsed: the test only needs to see
// that the config arrived).
func (t *translator) Configure(config []byte) error {
	t.prefix = string(config)
	return nil
}

// DecodeRequest takes the body as the model name.
func (t *translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	if len(body) == 0 {
		return sdk.BadInput("empty body")
	}
	req.Model = string(body)
	return nil
}

// EncodeResponse writes the response id and the plugin version.
func (t *translator) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	b := append(out.Body, `{"id":`...)
	b = jsonw.String(b, resp.ID)
	b = append(b, `,"v":`...)
	b = jsonw.String(b, Version)
	out.Body = append(b, '}')
	return nil
}

// EncodeStream counts chunks in the state blob and writes one SSE event per
// chunk with its running number.
func (t *translator) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	r := sdk.StateReader{B: st.In}
	var n uint64
	if len(st.In) > 0 {
		n = r.Uint()
		if r.Err() != nil {
			return sdk.BadInput("bad state")
		}
	}
	for i := range chunks {
		n++
		ch := &chunks[i]
		b := append(out.Body, `data: {"n":`...)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, `,"id":`...)
		b = jsonw.String(b, ch.ID)
		out.Body = append(b, "}\n\n"...)
	}
	if c.End() {
		out.Body = append(out.Body, "data: [DONE]\n\n"...)
	}
	w := sdk.StateWriter{}
	w.Uint(n)
	st.Set(w.B)
	return nil
}

// EncodeError writes a tiny error body with the version, so tests can tell
// which build served a call.
func (t *translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	b := append(out.Body, `{"v":`...)
	b = jsonw.String(b, Version)
	b = append(b, `,"msg":`...)
	b = jsonw.String(b, e.Message)
	out.Body = append(b, '}')
	out.SetMeta(abi.MetaStatus, strconv.Itoa(e.Status))
	return nil
}

// Manifest is the plugin's manifest.
func Manifest() sdk.Manifest { return sdk.Manifest{Name: "good", Version: Version, Format: "test"} }

// New returns the translator.
func New() sdk.Translator { return &translator{} }

// NewPlugin returns a native sdk.Plugin serving the translator.
func NewPlugin() *sdk.Plugin { return sdk.NewTranslator(Manifest(), New()) }
