package fetchguard

import (
	"bytes"
	"encoding/base64"
	"strings"
)

// Image is a fetched or decoded image. MediaType comes from the bytes, not
// from what the server or client declared.
type Image struct {
	MediaType string // image/png, image/jpeg, image/gif or image/webp
	Data      []byte
}

// Base64 is Data in standard base64, the form Ollama's images field takes.
func (i Image) Base64() string { return base64.StdEncoding.EncodeToString(i.Data) }

// DataURL is the image as a data: URL.
func (i Image) DataURL() string { return "data:" + i.MediaType + ";base64," + i.Base64() }

// sniff names the image format from its magic number, or "" when it is
// none of the four every vision backend takes.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// sniffed wraps data whose declared type was image/*. A declared subtype
// that disagrees with the bytes (image/jpg, a CDN serving WebP as JPEG) is
// common and harmless; bytes that are no image at all are refused.
func sniffed(data []byte) (Image, error) {
	mt := sniff(data)
	if mt == "" {
		return Image{}, errNotImage(nil)
	}
	return Image{MediaType: mt, Data: data}, nil
}

func errNotImage(cause error) *Error {
	return newError(ReasonNotImage, cause, "image URL did not give a PNG, JPEG, GIF or WebP image")
}

func isDataURL(s string) bool { return len(s) >= 5 && strings.EqualFold(s[:5], "data:") }

// ParseDataURL decodes a data:image/...;base64,... URL of at most
// DefaultMaxBytes decoded bytes; Fetcher.Load applies Config.MaxBytes.
func ParseDataURL(s string) (Image, error) { return parseDataURL(s, DefaultMaxBytes) }

func parseDataURL(s string, maxBytes int64) (Image, error) {
	if !isDataURL(s) {
		return Image{}, newError(ReasonURL, nil, "image URL is not a data URL")
	}
	meta, payload, ok := strings.Cut(s[5:], ",")
	if !ok {
		return Image{}, newError(ReasonURL, nil, "data URL has no comma before its data")
	}
	meta, ok = cutSuffixFold(meta, ";base64")
	if !ok {
		return Image{}, newError(ReasonURL, nil, "data URL must be base64-encoded")
	}
	mt, _, _ := strings.Cut(meta, ";")
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(mt)), "image/") {
		return Image{}, newError(ReasonNotImage, nil, "data URL is not an image/* media type")
	}
	// Bound the allocation before decoding: a quarter more than the limit
	// leaves room for line breaks, which the decoder skips.
	if int64(base64.RawStdEncoding.DecodedLen(len(payload))) > maxBytes+maxBytes/4+3 {
		return Image{}, dataTooLarge(maxBytes)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		// Some clients drop the padding.
		var rawErr error
		if data, rawErr = base64.RawStdEncoding.DecodeString(payload); rawErr != nil {
			return Image{}, newError(ReasonURL, err, "data URL is not valid base64")
		}
	}
	if int64(len(data)) > maxBytes {
		return Image{}, dataTooLarge(maxBytes)
	}
	return sniffed(data)
}

func dataTooLarge(maxBytes int64) *Error {
	return newError(ReasonTooLarge, nil, "image is larger than %d bytes", maxBytes)
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}
