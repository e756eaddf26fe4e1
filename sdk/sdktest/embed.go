package sdktest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// EmbedCall runs the embedding op op on payload through p's ABI entry
// point as the host does (Harness.Call), with only the meta given (nil:
// none), and returns the status, the result's meta, a copy of its payload
// and its error text.
func EmbedCall(tb testing.TB, p *sdk.Plugin, op abi.Op, payload []byte, meta map[string]string) (abi.Status, map[string]string, []byte, string) {
	tb.Helper()
	var kv []string
	for k, v := range meta {
		kv = append(kv, k, v)
	}
	r := New(tb, p).Call(op, NoDefaults(), Payload(payload), Meta(kv...))
	return r.Status, r.Meta, r.Payload, r.Error
}

// JSONGolden compares got with the JSON document in the file at path as
// values (member order, white space and number spelling aside), failing
// the test with both when they differ; with update it writes got there,
// indented, instead.
func JSONGolden(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, append(buf.Bytes(), '\n'), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		tb.Fatalf("%s is not JSON: %v", path, err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("%s differs:\ngot  %s\nwant %s", path, got, want)
	}
}

// AdapterEmbedGolden is an adapter's embedding golden test over the files
// in dir, at least two of each kind, as subtests encode/<name> and
// decode/<name>: each <name>.req.canon.json through OpEmbedRequestEncode
// is <name>.req.<engine>.json (JSONGolden), POSTed as JSON to path; each
// <name>.resp.<engine>.json through OpEmbedResponseDecode is
// <name>.resp.canon.json, with the prompt-token meta exactly when it has
// usage. With update the outputs are rewritten.
func AdapterEmbedGolden(t *testing.T, p *sdk.Plugin, dir, engine, path string, update bool) {
	t.Helper()
	reqs, _ := filepath.Glob(filepath.Join(dir, "*.req.canon.json"))
	resps, _ := filepath.Glob(filepath.Join(dir, "*.resp."+engine+".json"))
	if len(reqs) < 2 || len(resps) < 2 {
		t.Fatalf("golden files missing in %s", dir)
	}
	for _, f := range reqs {
		name := strings.TrimSuffix(filepath.Base(f), ".req.canon.json")
		t.Run("encode/"+name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			st, meta, out, msg := EmbedCall(t, p, abi.OpEmbedRequestEncode, b, nil)
			if st != abi.StatusOK {
				t.Fatalf("%s: %s", st, msg)
			}
			if meta[abi.MetaPath] != path || meta[abi.MetaMethod] != "POST" || meta[abi.MetaContentType] != "application/json" {
				t.Errorf("meta %v", meta)
			}
			JSONGolden(t, filepath.Join(dir, name+".req."+engine+".json"), out, update)
		})
	}
	for _, f := range resps {
		name := strings.TrimSuffix(filepath.Base(f), ".resp."+engine+".json")
		t.Run("decode/"+name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			st, meta, out, msg := EmbedCall(t, p, abi.OpEmbedResponseDecode, b, nil)
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
			JSONGolden(t, filepath.Join(dir, name+".resp.canon.json"), out, update)
		})
	}
}

// FuzzAdapterEmbedResponse fuzzes an adapter's OpEmbedResponseDecode,
// seeded with dir's <name>.resp.<engine>.json and seeds: every input is
// ok, with canonical output that decodes, or bad input.
func FuzzAdapterEmbedResponse(f *testing.F, p *sdk.Plugin, dir, engine string, seeds ...string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.resp."+engine+".json"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st, _, out, msg := EmbedCall(t, p, abi.OpEmbedResponseDecode, body, nil)
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
