package responses

import (
	"context"
	"strings"
	"testing"
)

func BenchmarkSSEScan_Stream(b *testing.B) {
	s := []byte(stream("resp_1", "response.completed", strings.Repeat("token ", 2000)))
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		sc := sseScan{max: 1 << 20}
		for chunk := range slicesOf(s, 512) {
			sc.feed(chunk)
		}
	}
}

func BenchmarkServes(b *testing.B) {
	k := New(nil, Options{}, nil)
	method, path := []byte("POST"), []byte("/v1/chat/completions")
	b.ReportAllocs()
	for b.Loop() {
		_ = k.Serves(method, path)
	}
}

// What Begin adds to a Responses request with no history (store true):
// parse, normalise and copy the input items. The store write comes at
// the terminal event.
func BenchmarkBegin_NoHistory(b *testing.B) {
	k := New(nil, Options{}, nil)
	body := []byte(`{"model":"m","instructions":"be brief","input":[` +
		strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"`+strings.Repeat("lorem ipsum ", 40)+`"},`, 8), ",") + `]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := k.Begin(context.Background(), alice, "chatcmpl-0", body); err != nil {
			b.Fatal(err)
		}
	}
}
