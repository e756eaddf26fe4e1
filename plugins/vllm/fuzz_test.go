package vllm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func seedDir(f *testing.F, dir string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkOK fails on anything but a clean result or a BadInput: a decode path
// must never panic (the SDK turns panics into StatusPluginError) and its
// canonical output must read back.
func checkResult(t *testing.T, r result, decode func([]byte) error) {
	t.Helper()
	switch r.Status {
	case abi.StatusOK:
		if decode != nil {
			if err := decode(r.Payload); err != nil {
				t.Fatalf("canonical output does not decode: %v\n%s", err, r.Payload)
			}
		}
	case abi.StatusBadInput:
	default:
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
}

// FuzzDecodeStream feeds an SSE body, framed as the host frames it, once in
// one call and once event by event with the state carried: both must
// succeed or fail alike and, on success, agree byte for byte.
func FuzzDecodeStream(f *testing.F) {
	seedDir(f, "streams")
	f.Add([]byte("data: [DONE]\n\ndata: not json\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"a\"},{\"function\":{\"arguments\":{}}}]},\"finish_reason\":\"stop\"}]}\n\n"))
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte) {
		events := frameSSE(body)
		one, doneOne, errOne := streamABI(t, p, [][][]byte{events})
		var per [][][]byte
		for _, e := range events {
			per = append(per, [][]byte{e})
		}
		if len(per) == 0 {
			per = [][][]byte{nil}
		}
		each, doneEach, errEach := streamABI(t, p, per)
		if (errOne == "") != (errEach == "") {
			t.Fatalf("one call %q, per event %q", errOne, errEach)
		}
		for _, msg := range []string{errOne, errEach} {
			if msg != "" && !bytes.HasPrefix([]byte(msg), []byte("bad_input: ")) {
				t.Fatalf("not a BadInput: %s", msg)
			}
		}
		if errOne != "" {
			return
		}
		if doneOne != doneEach || len(one) != len(each) {
			t.Fatalf("done %v/%v chunks %d/%d", doneOne, doneEach, len(one), len(each))
		}
		for i := range one {
			if !bytes.Equal(one[i], each[i]) {
				t.Fatalf("chunk %d differs:\n%s\n%s", i, one[i], each[i])
			}
			var c canon.ChatChunk
			if err := c.DecodeJSON(one[i]); err != nil {
				t.Fatalf("chunk %d does not decode: %v\n%s", i, err, one[i])
			}
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	seedDir(f, "responses")
	f.Add([]byte(`{"choices":[{"message":{"content":"<think>x"}}],"usage":{"prompt_tokens":1e400}}`))
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte) {
		r := callOp(t, p, abi.OpResponseDecode, 0, nil, nil, body)
		checkResult(t, r, func(b []byte) error { var x canon.ChatResponse; return x.DecodeJSON(b) })
	})
}

func FuzzDecodeError(f *testing.F) {
	for _, p := range []string{"not_found.json", "context_old.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "errors", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "400")
	}
	f.Add([]byte(`{"error":{"message":"The model x does not exist.","code":404}}`), "404")
	f.Add([]byte(`{"detail":[{"msg":"Field required"}]}`), "422")
	f.Add([]byte("\xff\xfe plain"), "500")
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte, status string) {
		r := callOp(t, p, abi.OpErrorDecode, 0, nil, map[string]string{"status": status}, body)
		checkResult(t, r, func(b []byte) error { var x canon.Error; return x.DecodeJSON(b) })
		if r.Status != abi.StatusOK {
			t.Fatalf("error decode must always produce an error: %s", r.Error)
		}
	})
}

func FuzzDecodeProbeMetrics(f *testing.F) {
	seedDir(f, "probes")
	f.Add([]byte("vllm:num_requests_running{a=\"\\\"}\"} 1e+00 17\nvllm:kv_cache_usage_perc -0\n"))
	p := newPlugin()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, name := range []string{"metrics", "models", "health"} {
			r := callOp(t, p, abi.OpProbeDecode, 0, nil, map[string]string{"probe": name, "status": "200"}, body)
			checkResult(t, r, func(b []byte) error {
				var d canon.Discovery
				if err := d.DecodeJSON(b); err != nil {
					return err
				}
				if d.KVCacheUsage < 0 || d.KVCacheUsage > 1 || d.Running < 0 || d.Waiting < 0 {
					t.Fatalf("out of range: %+v", d)
				}
				return nil
			})
			if name == "metrics" && r.Status != abi.StatusOK {
				t.Fatalf("metrics must accept any text: %s", r.Error)
			}
		}
	})
}
