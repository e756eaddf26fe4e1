package ollamaapi

import (
	"encoding/base64"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeImages reads an images array (Ollama sends raw base64, no data:
// prefix) into image parts appended to m. The media type, which the
// canonical part needs and Ollama's wire format does not carry, is sniffed
// from the image's first bytes.
func decodeImages(v *fastjson.Value, path string, m *canon.Message) error {
	if v == nil {
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType(path, "an array of base64 strings")
	}
	for j, iv := range arr {
		s, ok := jsonread.Str(iv)
		if !ok {
			return jsonread.ErrType(jsonread.At(path, j), "a base64 string")
		}
		mt, data, err := imageData(s)
		if err != nil {
			return sdk.BadInput(jsonread.At(path, j) + ": " + err.Error())
		}
		m.Content = append(m.Content, canon.Part{Type: canon.PartImage, MediaType: mt, Data: data})
	}
	return nil
}

// imageData returns an image's media type and its base64 text. A data:
// URI is accepted too (some clients send one); its declared type is kept.
func imageData(s string) (mediaType, data string, err error) {
	if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
		head, body, ok := strings.Cut(s[5:], ",")
		head, isB64 := strings.CutSuffix(strings.ToLower(head), ";base64")
		if !ok || !isB64 || body == "" || !strings.HasPrefix(head, "image/") {
			return "", "", sdk.BadInput("a data URI image must be data:image/<type>;base64,<data>")
		}
		mt, _, _ := strings.Cut(head, ";")
		return mt, body, nil
	}
	if s == "" {
		return "", "", sdk.BadInput("image is empty")
	}
	mt := sniffImage(s)
	if mt == "" {
		return "", "", sdk.BadInput("not a base64 PNG, JPEG, GIF or WebP image")
	}
	return mt, s, nil
}

// sniffImage decodes the first 12 bytes of base64 text and returns the
// media type their magic number says, or "".
func sniffImage(s string) string {
	const n = 16 // base64 characters for 12 bytes
	if len(s) > n {
		s = s[:n]
	}
	var head [12]byte
	// A short or padded prefix decodes partly; what decoded is enough.
	k, _ := base64.StdEncoding.Decode(head[:], []byte(s))
	if k == 0 {
		k, _ = base64.RawStdEncoding.Decode(head[:], []byte(strings.TrimRight(s, "=")))
	}
	b := head[:k]
	switch {
	case hasPrefix(b, "\x89PNG\r\n\x1a\n"):
		return "image/png"
	case hasPrefix(b, "\xff\xd8\xff"):
		return "image/jpeg"
	case hasPrefix(b, "GIF87a"), hasPrefix(b, "GIF89a"):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }
