package responses

import (
	"bytes"
	"math/bits"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/core/jsonscan"
)

// Begin's quick path: a request with no history to splice (no
// previous_response_id, no conversation) is returned as it is, and what
// only storage needs (item ids, normalised items, blobs) waits for the
// Turn to store the response, off the time to first token. One scan of
// the body, allocating nothing, proves that the full path would accept
// the request as it is; on any doubt Begin takes the full path, which
// answers exactly as before.

// topSpec names the top-level fields Begin acts on.
var topSpec = jsonscan.MustSpec("store", "previous_response_id", "conversation", "input")

const (
	topStore = iota
	topPrev
	topConv
	topInput
)

// quickLimits leaves to the full path what fastjson would refuse to
// parse (it counts scalars as a level, up to 300).
var quickLimits = jsonscan.Limits{MaxDepth: 256}

// normSlack bounds what normalising adds to one item: a "type", a text
// part around a string content, an id.
const normSlack = 256

// quick reports whether Begin may return body as it is without the full
// path, with store and the raw text of input (nil when absent or null).
// Duplicate keys: the last occurrence counts, as in the translators, so
// the items stored are those the backend got.
func (k *Keeper) quick(body []byte) (store bool, input []byte, ok bool) {
	var res jsonscan.Result
	if jsonscan.Scan(body, topSpec, quickLimits, &res) != nil {
		return false, nil, false
	}
	if res.Found&(1<<topPrev|1<<topConv) != 0 {
		return false, nil, false // history, or a null key to strip
	}
	store = true
	if v, found := res.Get(topStore); found {
		switch v.Kind {
		case jsonscan.True, jsonscan.Null:
		case jsonscan.False:
			store = false
		default:
			return false, nil, false
		}
	}
	in, found := res.Get(topInput)
	switch {
	case !found || in.Kind == jsonscan.Null:
		return store, nil, true
	case in.Kind != jsonscan.String && in.Kind != jsonscan.Array:
		return false, nil, false
	}
	raw := in.Raw(body)
	if !store {
		return false, raw, true // the full path checks no item either
	}
	// The reserved image scheme, plainly or spelt with escapes: the full
	// path decides.
	if bytes.Contains(raw, []byte("mr-blob:")) || escapesBlobChar(raw) {
		return false, nil, false
	}
	// Re-encoded, a byte grows at most sixfold (an invalid UTF-8 byte
	// becomes \ufffd): a short input needs no item measured.
	short := 6*len(raw)+normSlack <= k.opts.MaxItemBytes
	if in.Kind == jsonscan.String {
		return true, raw, short || k.fits(raw)
	}
	return true, raw, k.itemsOK(raw, short)
}

// fits reports whether an item whose raw text is raw stays within
// MaxItemBytes once normalised and re-encoded: an escape grows by at most
// four bytes (\b becomes \u0008); in valid UTF-8 only U+2028 and U+2029
// grow (by three: \u2028); otherwise each byte over 0x7f may become six
// (\ufffd).
func (k *Keeper) fits(raw []byte) bool {
	n := len(raw) + normSlack + 4*bytes.Count(raw, []byte{'\\'})
	if n > k.opts.MaxItemBytes {
		return false
	}
	if utf8.Valid(raw) {
		n += 3 * (bytes.Count(raw, []byte("\u2028")) + bytes.Count(raw, []byte("\u2029")))
		return n <= k.opts.MaxItemBytes
	}
	for len(raw) >= 8 {
		n += 5 * bits.OnesCount64(le64(raw)&0x8080808080808080)
		raw = raw[8:]
	}
	for _, c := range raw {
		if c >= 0x80 {
			n += 5
		}
	}
	return n <= k.opts.MaxItemBytes
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// escapesBlobChar reports a \u00XX escape of a character of
// "mr-blob:sha256:" (lower-case letters, digits, '-', ':'), the only way
// to spell the reserved scheme without its plain bytes. Clients escape
// other characters (<, >, &, control and non-ASCII ones).
func escapesBlobChar(s []byte) bool {
	for {
		i := bytes.Index(s, []byte(`\u00`))
		if i < 0 || i+6 > len(s) {
			return false
		}
		c := unhex(s[i+4])<<4 | unhex(s[i+5])
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == ':' {
			return true
		}
		s = s[i+4:]
	}
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0xff
}

// itemsOK reports whether every element of the JSON array raw (valid
// JSON) is an item prepareItem accepts: an object whose "type" members
// are strings and "id" members valid ids, and, unless short, within
// MaxItemBytes. A key with an escape is a doubt.
func (k *Keeper) itemsOK(raw []byte, short bool) bool {
	i := skipSpace(raw, 1)
	if raw[i] == ']' {
		return true
	}
	for {
		end := skipValue(raw, i)
		if !itemOK(raw[i:end]) || !short && !k.fits(raw[i:end]) {
			return false
		}
		i = skipSpace(raw, end)
		if raw[i] == ']' {
			return true
		}
		i = skipSpace(raw, i+1) // the comma
	}
}

// itemOK checks one item's top-level members (item is valid JSON).
func itemOK(item []byte) bool {
	if item[0] != '{' {
		return false
	}
	i := skipSpace(item, 1)
	if item[i] == '}' {
		return true
	}
	for {
		kend := skipString(item, i)
		key := item[i+1 : kend-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		vs := skipSpace(item, skipSpace(item, kend)+1) // past the colon
		vend := skipValue(item, vs)
		switch string(key) {
		case "type":
			if item[vs] != '"' {
				return false
			}
		case "id":
			if item[vs] != '"' || !validID(item[vs+1:vend-1]) {
				return false
			}
		}
		i = skipSpace(item, vend)
		if item[i] == '}' {
			return true
		}
		i = skipSpace(item, i+1) // the comma
	}
}

func skipSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index just past the string that opens at s[i]
// (valid JSON).
func skipString(s []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		n := 0 // backslashes before the quote: an odd count escapes it
		for n < i && s[i-1-n] == '\\' {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index just past the value that starts at s[i]
// (valid JSON).
func skipValue(s []byte, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t' {
		i++
	}
	return i
}
