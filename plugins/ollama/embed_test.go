package ollama

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var embedUpdate = flag.Bool("embed-update", false, "rewrite the embedding golden outputs in testdata/embed")

func newEmbedPlugin() *sdk.Plugin { return sdk.NewAdapter(Manifest(), New()) }

// embedCall runs one embedding op through the SDK dispatcher as the host
// does.
func embedCall(t testing.TB, p *sdk.Plugin, op abi.Op, payload []byte) (abi.Status, map[string]string, []byte, string) {
	t.Helper()
	in := make([]byte, abi.HeaderSize)
	abi.PutHeader(in, abi.Header{PayloadLen: uint32(len(payload))})
	r, err := abi.ParseResult(p.Call(op, append(in, payload...)))
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{}
	for m := r.Meta; len(m) > 0; {
		k, v, rest, err := abi.NextMeta(m)
		if err != nil {
			t.Fatal(err)
		}
		meta[string(k)] = string(v)
		m = rest
	}
	return r.Status, meta, bytes.Clone(r.Payload), string(r.Error)
}

func embedGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *embedUpdate {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(buf.Bytes(), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs:\ngot  %s\nwant %s", path, got, want)
	}
}

func TestEmbedGolden(t *testing.T) {
	p := newEmbedPlugin()
	dir := filepath.Join("testdata", "embed")
	reqs, _ := filepath.Glob(filepath.Join(dir, "*.req.canon.json"))
	resps, _ := filepath.Glob(filepath.Join(dir, "*.resp.ollama.json"))
	n := 0
	for _, f := range reqs {
		n++
		name := strings.TrimSuffix(filepath.Base(f), ".req.canon.json")
		t.Run("encode/"+name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			st, meta, out, msg := embedCall(t, p, abi.OpEmbedRequestEncode, b)
			if st != abi.StatusOK {
				t.Fatalf("%s: %s", st, msg)
			}
			if meta[abi.MetaPath] != embedPath || meta[abi.MetaMethod] != "POST" || meta[abi.MetaContentType] != "application/json" {
				t.Errorf("meta %v", meta)
			}
			embedGolden(t, filepath.Join(dir, name+".req.ollama.json"), out)
		})
	}
	if n < 2 || len(resps) < 2 {
		t.Fatalf("golden files missing in %s", dir)
	}
	for _, f := range resps {
		name := strings.TrimSuffix(filepath.Base(f), ".resp.ollama.json")
		t.Run("decode/"+name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			st, meta, out, msg := embedCall(t, p, abi.OpEmbedResponseDecode, b)
			if st != abi.StatusOK {
				t.Fatalf("%s: %s", st, msg)
			}
			var resp canon.EmbeddingResponse
			if err := resp.DecodeJSON(out); err != nil {
				t.Fatal(err)
			}
			if pt, ok := meta[abi.MetaPromptTokens]; ok != (resp.Usage != nil) || ok && pt == "" {
				t.Errorf("prompt tokens meta %v for usage %+v", meta, resp.Usage)
			}
			embedGolden(t, filepath.Join(dir, name+".resp.canon.json"), out)
		})
	}
}

func FuzzDecodeEmbeddingResponse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "embed", "*.resp.ollama.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range embedFuzzSeeds {
		f.Add([]byte(s))
	}
	p := newEmbedPlugin()
	f.Fuzz(func(t *testing.T, body []byte) {
		st, _, out, msg := embedCall(t, p, abi.OpEmbedResponseDecode, body)
		switch st {
		case abi.StatusOK:
			var resp canon.EmbeddingResponse
			if err := resp.DecodeJSON(out); err != nil {
				t.Fatalf("canonical output does not decode: %v\n%s", err, out)
			}
		case abi.StatusBadInput:
		default:
			t.Fatalf("status %s: %s", st, msg)
		}
	})
}

const embedPath = pathEmbed

var embedFuzzSeeds = []string{
	`{"embeddings":[[1,null],[]],"prompt_eval_count":"x"}`,
	`{"embeddings":[1]}`,
	`{"embeddings":[],"prompt_eval_count":0}`,
}

func TestEmbedResponseErrors(t *testing.T) {
	p := newEmbedPlugin()
	for _, tc := range []struct{ body, msg string }{
		{`{"model":"m"}`, "no embeddings array"},
		{`[]`, "not a JSON object"},
		{`{"embeddings":[[1],2]}`, "embeddings[1] is not an array"},
		{`{"embeddings":[[1,"x"]]}`, "embeddings[0][1] is not a number"},
		{`{"embeddings":`, "not valid JSON"},
	} {
		st, _, _, msg := embedCall(t, p, abi.OpEmbedResponseDecode, []byte(tc.body))
		if st != abi.StatusBadInput || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %s %q, want %q", tc.body, st, msg, tc.msg)
		}
	}
}

// The fast path (vectors read straight from the body) and the general one
// read every valid answer alike, whitespace and member order included.
func TestEmbedResponseFastMatchesSlow(t *testing.T) {
	a := New()
	for _, body := range []string{
		`{"model":"m","embeddings":[[0.1,-2e-7,3],[4.5]],"prompt_eval_count":3}`,
		"{ \"embeddings\" : [ [ 1 , 2 ] ,\n\t[ ] , [3] ] , \"model\" : \"m\" }",
		`{"prompt_eval_count":2,"model":"embeddings","embeddings":[]}`,
		`{"total_duration":1,"load_duration":{"x":[1,"]"]},"embeddings":[[1e-45,-0,3.4028235e38]]}`,
	} {
		var fast, slow canon.EmbeddingResponse
		if !a.decodeEmbedFast([]byte(body), &fast) {
			t.Errorf("%s: fast path refused it", body)
			continue
		}
		if err := a.decodeEmbedSlow([]byte(body), &slow); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %+v, slow %+v", body, fast, slow)
		}
	}
	// What the fast path cannot read goes to the general path: bad input
	// with its message, never a different answer.
	for _, body := range []string{`{"embeddings":[[1,NaN]]}`, `{"embeddings":[[1]] x`, `{"embe\u0064dings":[[1]]}`, `{"embeddings":[[1,[2]]]}`} {
		var fast canon.EmbeddingResponse
		if a.decodeEmbedFast([]byte(body), &fast) {
			t.Errorf("%s: fast path accepted it: %+v", body, fast)
		}
	}
}
