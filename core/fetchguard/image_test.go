package fetchguard

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestParseDataURL(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	for _, tc := range []struct {
		name, url string
		want      Reason // 0: success
	}{
		{"plain", "data:image/png;base64," + b64, 0},
		{"upper case", "DATA:IMAGE/PNG;BASE64," + b64, 0},
		{"params", "data:image/png;name=x.png;base64," + b64, 0},
		{"declared jpeg", "data:image/jpeg;base64," + b64, 0},
		{"no padding", "data:image/png;base64," + strings.TrimRight(b64, "="), 0},
		{"line breaks", "data:image/png;base64," + b64[:20] + "\r\n" + b64[20:], 0},
		{"not data", "http://example.com/i.png", ReasonURL},
		{"no comma", "data:image/png;base64", ReasonURL},
		{"not base64 encoded", "data:image/png," + string(pngBytes), ReasonURL},
		{"bad base64", "data:image/png;base64,!!!!", ReasonURL},
		{"text type", "data:text/plain;base64," + b64, ReasonNotImage},
		{"no type", "data:;base64," + b64, ReasonNotImage},
		{"svg", "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte("<svg/>")), ReasonNotImage},
		{"sniff mismatch", "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("<html></html>")), ReasonNotImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := ParseDataURL(tc.url)
			if tc.want != 0 {
				wantReason(t, err, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if img.MediaType != "image/png" || !bytes.Equal(img.Data, pngBytes) {
				t.Errorf("got %s, %d bytes", img.MediaType, len(img.Data))
			}
		})
	}
}

func TestParseDataURLSize(t *testing.T) {
	enc := func(n int) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(padded(n)) }
	if img, err := parseDataURL(enc(300), 300); err != nil || len(img.Data) != 300 {
		t.Errorf("at the limit: %d bytes, %v", len(img.Data), err)
	}
	for _, n := range []int{301, 302, 303, 10_000} {
		_, err := parseDataURL(enc(n), 300)
		wantReason(t, err, ReasonTooLarge)
	}
	// Over the default limit, refused before decoding.
	_, err := ParseDataURL("data:image/png;base64," + strings.Repeat("A", DefaultMaxBytes*2))
	wantReason(t, err, ReasonTooLarge)
}
