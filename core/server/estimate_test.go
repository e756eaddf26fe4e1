package server

import (
	"strings"
	"testing"
)

func TestInputEstimate(t *testing.T) {
	text := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 200) + `"}]}`
	img := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` +
		strings.Repeat("QUJD", 250000) + `"}}]}]}`
	cut := `{"x":"data:image/png;base64,` + strings.Repeat("A", 1000) // no closing quote
	for _, tc := range []struct {
		name     string
		body     string
		min, max int64
	}{
		{"empty", "", 1, 1},
		{"text", text, int64(len(text) / 4), int64(len(text)/4) + 1},
		{"image data URL left out", img, 20, 40},
		{"unterminated data URL", cut, 1, 10},
	} {
		if got := inputEstimate([]byte(tc.body)); got < tc.min || got > tc.max {
			t.Errorf("%s: %d, want %d..%d", tc.name, got, tc.min, tc.max)
		}
	}
}

func BenchmarkInputEstimate(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 400) + `"}]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		inputEstimate(body)
	}
}
