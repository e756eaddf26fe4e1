package responses

import (
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
