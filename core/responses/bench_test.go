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

// noHistoryBody is a request of eight user messages, stored, with no
// history.
var noHistoryBody = []byte(`{"model":"m","instructions":"be brief","input":[` +
	strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"`+strings.Repeat("lorem ipsum ", 40)+`"},`, 8), ",") + `]}`)

// What Begin adds to a Responses request with no history (store true),
// before the backend call: one scan of the body. The items are prepared
// and the store written at the terminal event.
func BenchmarkBegin_NoHistory(b *testing.B) {
	k := New(nil, Options{}, nil)
	body := noHistoryBody
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := k.Begin(context.Background(), alice, "chatcmpl-0", body); err != nil {
			b.Fatal(err)
		}
	}
}

// The same request with a 64 KiB image: the quick path does not hash or
// copy it before the backend call.
func BenchmarkBegin_NoHistoryImage(b *testing.B) {
	k := New(nil, Options{}, nil)
	body := []byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"what is this?"},` +
		`{"type":"input_image","image_url":"data:image/png;base64,` + strings.Repeat("QUJD", 16<<10) + `"}]}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := k.Begin(context.Background(), alice, "chatcmpl-0", body); err != nil {
			b.Fatal(err)
		}
	}
}

// What the quick path moved to the Turn, run when it stores the response
// (after the answer): the items parsed, normalised, given ids.
func BenchmarkTurn_Prepare(b *testing.B) {
	k := New(nil, Options{}, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(noHistoryBody)))
	for b.Loop() {
		_, tn, err := k.Begin(context.Background(), alice, "chatcmpl-0", noHistoryBody)
		if err != nil {
			b.Fatal(err)
		}
		a := k.arenas.Get()
		if err := tn.(*turn).prepare(a); err != nil {
			b.Fatal(err)
		}
		a.Reset()
		k.arenas.Put(a)
	}
}
