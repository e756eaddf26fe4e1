package audit

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Blob is a large binary payload (an image, a PDF) taken out of an
// event's content: the content keeps a reference to it (BlobRef) and the
// bytes are stored once, keyed by their hash, in the blobs table.
type Blob struct {
	SHA256    string // hex, lowercase: the key
	MediaType string
	Data      string // the decoded bytes
}

// BlobPrefix starts every reference that replaces a payload in stored
// content:
//
//	mr-blob:sha256:<64 hex>;type=<media type>;size=<bytes>
//
// followed by ";not-stored" when the payload was over the bounds
// (Options.MaxBlobBytes, MaxEventBlobBytes) and only its hash was kept.
// A base64 payload cut off by max_content_bytes becomes "mr-blob:cut".
const BlobPrefix = "mr-blob:"

// Default bounds of blob extraction.
const (
	DefaultBlobMinBytes      = 1 << 10
	DefaultMaxBlobBytes      = 8 << 20
	DefaultMaxEventBlobBytes = 16 << 20
)

// blobLimits are a recorder's bounds, and the running total of an event.
type blobLimits struct {
	min      int // base64 length from which a payload leaves the content
	perBlob  int // decoded bytes
	perEvent int
	total    int
}

// mayHoldBlobs is a cheap test that s might hold a base64 payload worth
// extracting, so that ordinary content skips the scan.
func mayHoldBlobs(s string, min int) bool {
	return len(s) >= min && (strings.Contains(s, ";base64,") || strings.Contains(s, `"data"`) || strings.Contains(s, `"images"`))
}

// extractBlobs replaces, in JSON (or SSE or NDJSON) content s, every
// string value that is a base64 payload of at least lim.min characters by
// a reference, and appends the payloads within the bounds to blobs. A
// payload is: a data: URL with ;base64 (OpenAI image_url, anything), or
// the value of a "data" key (Anthropic's base64 source, Gemini's
// inline_data) or an element of an "images" array (Ollama) that decodes
// to a recognisable image or PDF. cut reports that a payload cut off at
// the end of s (content truncated by max_content_bytes) was dropped.
func extractBlobs(s string, lim *blobLimits, blobs []Blob) (out string, _ []Blob, cut bool) {
	var b strings.Builder
	last := 0 // s[last:i] is not yet copied to b
	key := ""
	for i := 0; i < len(s); {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			break
		}
		start := i + q // the opening quote
		end := stringEnd(s, start+1)
		if end < 0 { // unterminated: the content was cut inside this string
			raw := s[start+1:]
			if len(raw) >= lim.min && (key == "data" || key == "images" || strings.HasPrefix(raw, "data:")) {
				b.WriteString(s[last:start])
				b.WriteString(`"mr-blob:cut"`)
				return b.String(), blobs, true
			}
			break
		}
		raw := s[start+1 : end]
		i = end + 1
		if isKey(s, i) {
			key = raw
			continue
		}
		if len(raw) < lim.min {
			continue
		}
		ref, blob, ok := blobOf(raw, key, lim, blobs)
		if !ok {
			continue
		}
		if blob.Data != "" {
			blobs = append(blobs, blob)
		}
		b.WriteString(s[last : start+1])
		b.WriteString(ref)
		last = end
	}
	if last == 0 {
		return s, blobs, false
	}
	b.WriteString(s[last:])
	return b.String(), blobs, false
}

func hasBlob(blobs []Blob, sum string) bool {
	for i := range blobs {
		if blobs[i].SHA256 == sum {
			return true
		}
	}
	return false
}

// stringEnd is the index of the quote closing the JSON string whose
// content starts at from, or -1.
func stringEnd(s string, from int) int {
	for i := from; i < len(s); {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return -1
		}
		j := i + q
		bs := 0
		for k := j - 1; k >= from && s[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return j
		}
		i = j + 1
	}
	return -1
}

// isKey reports whether the string that ended just before i is an object
// key (the next non-space byte is a colon).
func isKey(s string, i int) bool {
	for ; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}

// blobOf decides whether the JSON string content raw (the value of key)
// is a payload, and returns its reference and, within the bounds, the
// blob (none when have already holds it).
func blobOf(raw, key string, lim *blobLimits, have []Blob) (ref string, blob Blob, ok bool) {
	if strings.IndexByte(raw, '\\') >= 0 { // escaped (\/, \n in wrapped base64)
		var u string
		if json.Unmarshal([]byte(`"`+raw+`"`), &u) != nil {
			return "", Blob{}, false
		}
		raw = u
	}
	mediaType, payload := "", raw
	if rest, found := strings.CutPrefix(raw, "data:"); found {
		head, body, found := strings.Cut(rest, ",")
		if !found || !strings.HasSuffix(head, ";base64") {
			return "", Blob{}, false
		}
		mediaType, _, _ = strings.Cut(head, ";")
		payload = body
	} else if key != "data" && key != "images" {
		return "", Blob{}, false
	}
	data, err := decodeBase64(payload)
	if err != nil || len(data) == 0 {
		return "", Blob{}, false
	}
	sniffed := http.DetectContentType(data)
	if mediaType == "" {
		// A bare base64 string is taken only when its bytes say what
		// they are: "data" keys hold other things too.
		if !strings.HasPrefix(sniffed, "image/") && sniffed != "application/pdf" {
			return "", Blob{}, false
		}
		mediaType = sniffed
	}
	if !validMediaType(mediaType) {
		mediaType = "application/octet-stream"
	}
	sum := sha256.Sum256(data)
	blob = Blob{SHA256: hex.EncodeToString(sum[:]), MediaType: mediaType}
	ref = BlobPrefix + "sha256:" + blob.SHA256 + ";type=" + mediaType + ";size=" + strconv.Itoa(len(data))
	if hasBlob(have, blob.SHA256) { // the same payload again in this event: stored once
		return ref, Blob{}, true
	}
	if len(data) > lim.perBlob || lim.total+len(data) > lim.perEvent {
		return ref + ";not-stored", Blob{}, true
	}
	lim.total += len(data)
	blob.Data = string(data)
	return ref, blob, true
}

// decodeBase64 accepts standard and URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	std, url := base64.StdEncoding, base64.URLEncoding
	if len(s)%4 != 0 {
		std, url = base64.RawStdEncoding, base64.RawURLEncoding
	}
	b, err := std.DecodeString(s)
	if err != nil { // rare: try the URL-safe alphabet
		b, err = url.DecodeString(s)
	}
	return b, err
}

// validMediaType keeps a media type that can go into a reference as is.
func validMediaType(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&^_.+-/", c) >= 0) {
			return false
		}
	}
	return true
}

// extract moves e's base64 payloads into e.Blobs (the spool goroutine's
// work, never Observe's).
func (lim blobLimits) extract(e *Event) {
	if lim.min <= 0 {
		return
	}
	lim.total = 0
	var cut1, cut2 bool
	if mayHoldBlobs(e.RequestBody, lim.min) {
		e.RequestBody, e.Blobs, cut1 = extractBlobs(e.RequestBody, &lim, e.Blobs)
	}
	if mayHoldBlobs(e.ResponseBody, lim.min) {
		e.ResponseBody, e.Blobs, cut2 = extractBlobs(e.ResponseBody, &lim, e.Blobs)
	}
	e.ContentTruncated = e.ContentTruncated || cut1 || cut2
}
