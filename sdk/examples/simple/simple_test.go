package simple

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// The wire format is this package's own made-up dialect, documented in
// simple.go's package comment; testdata/README.md says so too.

func newHarness(t testing.TB) *sdktest.Harness {
	return sdktest.New(t, sdk.NewTranslator(Manifest(), New()))
}

func TestDecodeRequest(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"minimal", "full"} {
		t.Run(name, func(t *testing.T) {
			body := readFile(t, "testdata/request_"+name+".json")
			req := h.DecodeRequest(body)
			sdktest.Golden(t, "testdata/request_"+name+".canon.json", req.AppendJSON(nil))
		})
	}
	// The SDK reports the routing fields as meta, from the request.
	r := h.Call(abi.OpRequestDecode, sdktest.Payload(readFile(t, "testdata/request_full.json")))
	if r.Meta[abi.MetaModel] != "llama3" || r.Meta[abi.MetaStream] != "1" || r.Meta[abi.MetaMaxTokens] != "64" {
		t.Errorf("meta %v", r.Meta)
	}
}

func TestRequestErrors(t *testing.T) {
	h := newHarness(t)
	for body, want := range map[string]string{
		`{"model":"m"}`:                              "prompt: required",
		`{"prompt":"hi"}`:                            "model: required",
		`{"model":"m","prompt":5}`:                   "prompt: expected string, got number",
		`{"model":"m","prompt":""}`:                  "prompt: must not be empty",
		`{"model":"m","prompt":"hi","max_tokens":0}`: "max_tokens: expected an integer from 1 to 1048576, got 0",
		`{"model":"m","prompt":"hi","stream":"yes"}`: "stream: expected boolean, got string",
		`{"model":"m","prompt":"hi","system":[]}`:    "system: expected string, got array",
		`["model"]`: "expected object, got array",
		`{"model":`: "invalid JSON: ",
	} {
		if got := h.RequestError([]byte(body)); !strings.HasPrefix(got, want) {
			t.Errorf("%s: error %q, want %q", body, got, want)
		}
	}
	// Optional fields may be null.
	req := h.DecodeRequest([]byte(`{"model":"m","prompt":"hi","system":null,"max_tokens":null,"stream":null}`))
	if len(req.Messages) != 1 || req.MaxTokens != 0 || req.Stream {
		t.Errorf("nulls: %+v", req)
	}
}

var response = canon.ChatResponse{
	ID: "backend-id", Model: "backend-model", Created: 1,
	Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant,
		Content: []canon.Part{{Type: canon.PartText, Text: "Hello \"there\" \u00e9"}}}, FinishReason: canon.FinishStop}},
	Usage: &canon.Usage{PromptTokens: 5, CompletionTokens: 3, TotalTokens: 8},
}

func TestEncodeResponse(t *testing.T) {
	h := newHarness(t)
	sdktest.Golden(t, "testdata/response.json", h.EncodeResponse(response, sdktest.Meta(abi.MetaModel, "llama3")))
}

// stream is a canonical stream as an adapter produces it: role, text in
// pieces, the finish reason, then usage alone (as vLLM reports it).
var stream = []canon.ChatChunk{
	{ID: "c", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Role: canon.RoleAssistant}}}},
	{ID: "c", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "Hel"}}}},
	{ID: "c", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "lo\n\"x\""}}}},
	{ID: "c", Choices: []canon.ChunkChoice{{Index: 1, Delta: canon.Delta{Content: "other choice"}}}},
	{ID: "c", Choices: []canon.ChunkChoice{{FinishReason: canon.FinishLength}}},
	{ID: "c", Usage: &canon.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}},
}

func TestEncodeStream(t *testing.T) {
	h := newHarness(t)
	out := h.EncodeStream([][]canon.ChatChunk{stream[:2], stream[2:], nil})
	sdktest.Golden(t, "testdata/stream.ndjson", out)
	// However the gateway batches the chunks, the client gets these bytes.
	if got := sdktest.SplitInvariant(t, h.Plugin(), abi.OpStreamEncode, sdktest.Chunks(stream...)); string(got) != string(out) {
		t.Errorf("one call gives %q, batches gave %q", got, out)
	}
}

func TestStreamState(t *testing.T) {
	h := newHarness(t)
	r := h.Call(abi.OpStreamEncode, sdktest.Items(sdktest.Chunks(stream[4])...), sdktest.Flags(abi.FlagFirst))
	if !r.OK() || r.State == nil {
		t.Fatalf("a finish reason must be kept in the state: %+v", r)
	}
	r = h.Call(abi.OpStreamEncode, sdktest.Items(sdktest.Chunks(stream[1])...))
	if !r.OK() || r.State != nil {
		t.Fatalf("nothing to keep: the state must be kept as is, got %+v", r)
	}
	r = h.Expect(abi.StatusBadInput, abi.OpStreamEncode, sdktest.State([]byte{9, 9}), sdktest.Flags(abi.FlagEnd))
	if !strings.Contains(r.Error, "another version") {
		t.Errorf("error %q", r.Error)
	}
}

func TestEncodeError(t *testing.T) {
	h := newHarness(t)
	e := canon.Error{Status: 404, Type: canon.ErrNotFound, Message: `model "x" not found`}
	sdktest.Golden(t, "testdata/error.json", h.EncodeError(e).Payload)
	// Ending an open stream, the error is one more NDJSON line.
	if got := string(h.EncodeError(e, sdktest.Meta(abi.MetaStream, "1")).Payload); !strings.HasSuffix(got, "}}\n") {
		t.Errorf("stream error %q is not an NDJSON line", got)
	}
}

func TestEncodeModels(t *testing.T) {
	h := newHarness(t)
	list := canon.ModelList{Models: []canon.Model{{ID: "llama3"}, {ID: "qwen3:8b"}}}
	sdktest.Golden(t, "testdata/models.json", h.EncodeModels(list))
}

func FuzzDecodeRequest(f *testing.F) {
	sdktest.FuzzOp(f, sdk.NewTranslator(Manifest(), New()), abi.OpRequestDecode,
		[]byte(`{"model":"m","prompt":"hi","system":"s","max_tokens":5,"stream":true}`), []byte(`{"model":1}`))
}

func FuzzEncodeStream(f *testing.F) {
	items := sdktest.Chunks(stream...)
	seed := strings.Join([]string{string(items[1]), string(items[4]), string(items[5])}, "\n")
	sdktest.FuzzOp(f, sdk.NewTranslator(Manifest(), New()), abi.OpStreamEncode, []byte(seed))
}
