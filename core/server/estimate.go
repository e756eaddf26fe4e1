package server

import "bytes"

// inputEstimate is a quick, deliberately generous estimate of a request's
// input tokens, for the token-budget reservation made before the backend
// is called: a quarter of the body's bytes, leaving out the base64 payload
// of data: URLs (an image costs a backend hundreds of tokens, not a
// quarter of its megabytes). Counting with the tokenizer would cost
// milliseconds per request; the backend's reported usage settles the
// reservation afterwards, so the estimate only bounds how far a budget
// can be overshot (core/quota documents the bound).
func inputEstimate(body []byte) int64 {
	n := len(body)
	rest := body
	for {
		i := bytes.Index(rest, []byte(";base64,"))
		if i < 0 {
			break
		}
		rest = rest[i+8:]
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			j = len(rest)
		}
		n -= j
		rest = rest[j:]
	}
	return int64(n/4) + 1
}
