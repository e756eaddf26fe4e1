package server

import (
	"strings"
	"testing"
)

func TestInputEstimate(t *testing.T) {
	text := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 200) + `"}]}`
	payload := strings.Repeat("QUJD", 250000)
	img := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` +
		payload + `"}}]}]}`
	escaped := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url" : "data:image/png;base64,` +
		strings.Repeat(`ab\/c`, 200000) + `"}}]}]}`
	responses := `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/jpeg;base64,` +
		payload + `"}]}]}`
	prose := strings.Repeat("a long prose prompt that the backend reads as text. ", 2000) // ~100 KB
	// Text mentioning ";base64," must count in full (it hid everything up
	// to the next quote).
	marker := `{"model":"m","messages":[{"role":"user","content":"see ;base64, ` + prose + `"}]}`
	// A data URL where the backend reads text: a text part, a tool call's
	// arguments (escaped quotes), a payload that is not base64.
	inText := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"data:image/png;base64,` +
		strings.Repeat("QUJD", 25000) + `"}]}]}`
	inArgs := `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"url\":\"data:image/png;base64,` +
		strings.Repeat("QUJD", 25000) + `\"}"}}]}]}`
	notB64 := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD ` +
		prose + `"}}]}]}`
	cut := `{"x":"data:image/png;base64,` + strings.Repeat("A", 1000) // no closing quote
	for _, tc := range []struct {
		name     string
		body     string
		min, max int64 // 0, 0: every byte counts
	}{
		{"empty", "", 1, 1},
		{"text", text, int64(len(text) / 4), int64(len(text)/4) + 1},
		{"image data URL left out", img, 20, 40},
		{"escaped slashes left out", escaped, 20, 40},
		{"responses input_image left out", responses, 20, 40},
		{"unterminated data URL", cut, 0, 0},
		{"base64 marker in prose counts", marker, 0, 0},
		{"data URL in a text part counts", inText, 0, 0},
		{"data URL in tool arguments counts", inArgs, 0, 0},
		{"data URL with text after base64 counts", notB64, 0, 0},
	} {
		if tc.max == 0 {
			tc.min, tc.max = int64(len(tc.body)/4), int64(len(tc.body)/4)+1
		}
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
