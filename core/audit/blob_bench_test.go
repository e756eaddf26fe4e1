package audit

import (
	"encoding/base64"
	"testing"
)

// BenchmarkExtract is the spool goroutine's cost of taking images out of
// an event's content (decode, hash, copy): a request with one 1 MiB-ish
// image, and an ordinary chat request that the cheap pre-check lets
// through untouched.
func BenchmarkExtract(b *testing.B) {
	img := testPNG(b, 512, 1)
	withImage := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `"}}]}]}`
	plain := `{"model":"qwen3-8b","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways, in some detail, with examples and a short history of the field."}],"temperature":0.7}`
	lim := blobLimits{min: DefaultBlobMinBytes, perBlob: DefaultMaxBlobBytes, perEvent: DefaultMaxEventBlobBytes}
	for _, bc := range []struct{ name, body string }{{"image", withImage}, {"plain", plain}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				e := Event{RequestBody: bc.body}
				lim.extract(&e)
				if (len(e.Blobs) == 1) != (bc.name == "image") {
					b.Fatalf("%d blobs", len(e.Blobs))
				}
			}
		})
	}
}
