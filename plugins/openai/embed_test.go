package openai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

var embedUpdate = flag.Bool("embed-update", false, "rewrite the embedding golden outputs in testdata/embeddings")

func readJSON(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// embedCall is sdktest.EmbedCall.
var embedCall = sdktest.EmbedCall

func embedGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	sdktest.JSONGolden(t, path, got, *embedUpdate)
}

func TestEmbedGolden(t *testing.T) {
	p := newPlugin()
	reqs, _ := filepath.Glob("testdata/embeddings/*.req.json")
	resps, _ := filepath.Glob("testdata/embeddings/*.resp.canon.json")
	if len(reqs) < 3 || len(resps) < 2 {
		t.Fatalf("golden files missing: %v %v", reqs, resps)
	}
	for _, f := range reqs {
		name := strings.TrimSuffix(filepath.Base(f), ".req.json")
		t.Run("decode/"+name, func(t *testing.T) {
			st, meta, out, msg := embedCall(t, p, abi.OpEmbedRequestDecode, readJSON(t, f), map[string]string{abi.MetaRoute: RouteEmbeddings})
			if st != abi.StatusOK {
				t.Fatalf("%s: %s", st, msg)
			}
			var req canon.EmbeddingRequest
			if err := req.DecodeJSON(out); err != nil {
				t.Fatal(err)
			}
			if meta[abi.MetaModel] != req.Model || meta[abi.MetaEncodingFormat] != req.EncodingFormat {
				t.Errorf("meta %v for %+v", meta, req)
			}
			embedGolden(t, filepath.Join("testdata/embeddings", name+".canon.json"), out)
		})
	}
	for _, f := range resps {
		name := strings.TrimSuffix(filepath.Base(f), ".resp.canon.json")
		t.Run("encode/"+name, func(t *testing.T) {
			var meta map[string]string
			if err := json.Unmarshal(readJSON(t, filepath.Join("testdata/embeddings", name+".meta.json")), &meta); err != nil {
				t.Fatal(err)
			}
			st, _, out, msg := embedCall(t, p, abi.OpEmbedResponseEncode, readJSON(t, f), meta)
			if st != abi.StatusOK {
				t.Fatalf("%s: %s", st, msg)
			}
			embedGolden(t, filepath.Join("testdata/embeddings", name+".resp.json"), out)
		})
	}
}

// The base64 form is what the OpenAI SDKs decode: standard base64 of the
// little-endian float32 bytes, for every length (padding included).
func TestEmbedBase64MatchesStdlib(t *testing.T) {
	for n := range 8 {
		vec := make([]float32, n)
		raw := make([]byte, 4*n)
		for i := range vec {
			vec[i] = float32(i)*0.37 - 1
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(vec[i]))
		}
		if got, want := string(appendBase64Floats(nil, vec)), base64.StdEncoding.EncodeToString(raw); got != want {
			t.Errorf("%d floats: %q, want %q", n, got, want)
		}
	}
}

// The float form reads back as the same float32 values; non-finite ones
// (which JSON cannot express) become 0.
func TestEmbedFloatsRoundTrip(t *testing.T) {
	vec := []float32{0, 1, -1, 1e-7, math.SmallestNonzeroFloat32, math.MaxFloat32, 0.1, float32(math.Inf(1)), float32(math.NaN())}
	var got []float64
	if err := json.Unmarshal(sdk.AppendFloat32s(nil, vec, sdk.FloatG), &got); err != nil {
		t.Fatal(err)
	}
	for i, f := range vec {
		want := f
		if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
			want = 0
		}
		if float32(got[i]) != want {
			t.Errorf("[%d] %v read back as %v", i, f, got[i])
		}
	}
}

func TestEmbedRequestErrors(t *testing.T) {
	p := newPlugin()
	many := `{"model":"m","input":[` + strings.Repeat(`"x",`, maxEmbeddingInputs) + `"x"]}`
	for _, tc := range []struct{ body, msg string }{
		{`{"model":"m","input":""}`, "input must not be an empty string"},
		{`{"model":"m","input":[]}`, "input must not be an empty array"},
		{`{"model":"m","input":["a",""]}`, "input[1] must not be an empty string"},
		{`{"model":"m","input":[1,2,3]}`, "token arrays are not supported"},
		{`{"model":"m","input":[[1,2],[3]]}`, "token arrays are not supported"},
		{`{"model":"m","input":["a",null]}`, "input[1] must be a string"},
		{`{"model":"m","input":{"text":"a"}}`, "input must be a string or an array of strings"},
		{`{"model":"m"}`, "input is required"},
		{`{"model":"m","input":null}`, "input is required"},
		{many, "at most 2048 items, got 2049"},
		{`{"input":"a"}`, "model is required"},
		{`{"model":"","input":"a"}`, "model is required"},
		{`{"model":7,"input":"a"}`, "model must be a string"},
		{"{\"model\":\"\x80\",\"input\":\"a\"}", "model must be valid UTF-8"},
		{`{"model":"m","input":"a","encoding_format":"int8"}`, `encoding_format must be "float" or "base64"`},
		{`{"model":"m","input":"a","dimensions":0}`, "dimensions must be a positive integer"},
		{`{"model":"m","input":"a","dimensions":1.5}`, "dimensions must be a positive integer"},
		{`{"model":"m","input":"a","user":5}`, "user must be a string"},
		{`{"model":"m","input":"a"`, "not valid JSON"},
		{`["m"]`, "must be a JSON object"},
	} {
		st, _, out, msg := embedCall(t, p, abi.OpEmbedRequestDecode, []byte(tc.body), nil)
		if st != abi.StatusBadInput || !strings.Contains(msg, tc.msg) || len(out) != 0 {
			name := tc.body
			if len(name) > 60 {
				name = name[:60]
			}
			t.Errorf("%s: %s %q, want bad_input %q", name, st, msg, tc.msg)
		}
	}
}

// A response without usage still has the usage object the SDKs require,
// and the backend's model name when the host gave none.
func TestEmbedResponseDefaults(t *testing.T) {
	resp := canon.EmbeddingResponse{Model: "backend-model", Vectors: [][]float32{{0.5}}}
	st, _, out, msg := embedCall(t, newPlugin(), abi.OpEmbedResponseEncode, resp.AppendJSON(nil), nil)
	want := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"backend-model","usage":{"prompt_tokens":0,"total_tokens":0}}`
	if st != abi.StatusOK || string(out) != want {
		t.Errorf("%s %s\n%s", st, msg, out)
	}
}

func FuzzDecodeEmbeddingRequest(f *testing.F) {
	files, _ := filepath.Glob("testdata/embeddings/*.req.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","input":[[1],"a",""],"dimensions":-1}`))
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte) {
		st, meta, out, msg := embedCall(t, p, abi.OpEmbedRequestDecode, body, nil)
		switch st {
		case abi.StatusOK:
			var req canon.EmbeddingRequest
			if err := req.DecodeJSON(out); err != nil {
				t.Fatalf("canonical output does not decode: %v\n%s", err, out)
			}
			if req.Model == "" || len(req.Input) == 0 || meta[abi.MetaModel] != req.Model {
				t.Fatalf("accepted %q as %+v (meta %v)", body, req, meta)
			}
		case abi.StatusBadInput:
		default:
			t.Fatalf("status %s: %s", st, msg)
		}
	})
}
