package server

import (
	"bytes"

	"github.com/mindrouter/mindrouter/core/jsonscan"
)

// inputEstimate is a quick, deliberately generous estimate of a request's
// input tokens, for the token-budget reservation made before the backend
// is called and for the context pre-check: a quarter of the body's bytes,
// leaving out the base64 payload of images given as data: URLs (an image
// costs a backend hundreds of tokens, not a quarter of its megabytes).
// Counting with the tokenizer would cost milliseconds per request; the
// backend's reported usage settles the reservation afterwards, so the
// estimate only bounds how far a budget can be overshot (core/quota
// documents the bound).
//
// Only a real image data URL is left out: a JSON string that is the value
// of a "url" or "image_url" member (OpenAI's image_url part, the
// Responses API's input_image), starts with "data:image/", and holds
// nothing but base64 after ";base64,". Anything else counts in full, so
// text cannot hide from the estimate by mentioning ";base64," or by
// looking like a data URL where a backend would read it as text.
func inputEstimate(body []byte) int64 {
	n := len(body)
	for off := 0; ; {
		i := bytes.Index(body[off:], dataImagePrefix)
		if i < 0 {
			break
		}
		q := off + i // the opening quote
		off = q + len(dataImagePrefix)
		if !imageURLMember(body, q) {
			continue
		}
		payload, end, ok := base64Payload(body, off)
		if !ok {
			continue
		}
		n -= payload
		off = end
	}
	return int64(n/4) + 1
}

var dataImagePrefix = []byte(`"data:image/`)

// imageURLMember reports whether the string opening at body[q] is the
// value of a member named "url" or "image_url": q is preceded (spaces
// aside) by a colon and a key that is one of them. The body is valid JSON
// (the check stage ran), so an unescaped quote is a string delimiter and a
// string followed by a colon is a key.
func imageURLMember(body []byte, q int) bool {
	if escapedAt(body, q) {
		return false
	}
	j := skipSpaceBack(body, q-1)
	if j < 0 || body[j] != ':' {
		return false
	}
	j = skipSpaceBack(body, j-1)
	if j < 0 || body[j] != '"' || escapedAt(body, j) {
		return false
	}
	for _, key := range [...]string{"url", "image_url"} {
		k := j - len(key)
		if k >= 1 && string(body[k:j]) == key && body[k-1] == '"' && !escapedAt(body, k-1) {
			return true
		}
	}
	return false
}

// base64Payload reads a data URL's media type and base64 payload from
// body[off:] (just after "data:image/") to the closing quote: payload is
// the payload's length, end the index after it. ok is false when the
// string is not media type, ";base64,", base64 (JSON may escape its
// slashes), quote.
func base64Payload(body []byte, off int) (payload, end int, ok bool) {
	const maxMediaType = 64
	i := off
	for i < len(body) && i-off < maxMediaType && mediaTypeByte(body[i]) {
		i++
	}
	if !bytes.HasPrefix(body[i:], []byte(";base64,")) {
		return 0, 0, false
	}
	start := i + len(";base64,")
	for i = start; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '"':
			return i - start, i, true
		case base64Byte(c):
		case c == '\\' && i+1 < len(body) && body[i+1] == '/':
			i++
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// escapedAt reports whether body[i] is escaped: preceded by an odd number
// of backslashes.
func escapedAt(body []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && body[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

func skipSpaceBack(body []byte, j int) int {
	for j >= 0 && (body[j] == ' ' || body[j] == '\t' || body[j] == '\n' || body[j] == '\r') {
		j--
	}
	return j
}

func mediaTypeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '+' || c == '-' || c == '_'
}

func base64Byte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '='
}

// arrayLen counts the elements of the array v of body (valid JSON, as the
// check stage found it): the commas at its top level, plus one.
func arrayLen(body []byte, v jsonscan.Value) int {
	n, depth, inStr, any := 0, 0, false, false
	for i := v.Start + 1; i < v.End-1; i++ {
		c := body[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
			continue
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			n++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		any = true
	}
	if !any {
		return 0
	}
	return n + 1
}
