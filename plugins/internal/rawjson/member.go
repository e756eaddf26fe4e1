package rawjson

import "bytes"

// FindMember returns the offset in body, a JSON object, of the value of
// its first top-level member named key (compared as written, escapes not
// decoded), or -1 when it has none. It reads only as far as that member
// and skips the values before it without validating them, so a caller
// that reads the value itself must still validate the rest of body. It
// lets an adapter read a large value, such as an embedding response's
// vectors, without a general parser walking its every element. ok is
// false when body does not have an object's structure up to the member.
func FindMember(body []byte, key string) (off int, ok bool) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return -1, false
	}
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return -1, true
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return -1, false
		}
		end := stringEnd(body, i)
		if end < 0 {
			return -1, false
		}
		k := body[i+1 : end-1]
		i = skipWS(body, end)
		if i >= len(body) || body[i] != ':' {
			return -1, false
		}
		i = skipWS(body, i+1)
		if string(k) == key {
			return i, true
		}
		if i = skipValue(body, i); i < 0 {
			return -1, false
		}
		i = skipWS(body, i)
		if i >= len(body) {
			return -1, false
		}
		switch body[i] {
		case ',':
			i = skipWS(body, i+1)
		case '}':
			return -1, true
		default:
			return -1, false
		}
	}
}

// stringEnd returns the offset just past the string starting at b[i]
// (a '"'), or -1 when it does not end.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		bs := 0 // an odd run of backslashes before the quote escapes it
		for k := j - 1; k > i && b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return j + 1
		}
		j++
	}
}

// skipValue returns the offset just past the value starting at b[i], or
// -1 when it does not end: strings by their quotes, arrays and objects by
// their brackets (strings inside them skipped whole), anything else up to
// the next delimiter.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '[', '{':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '[', '{':
				depth++
			case ']', '}':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
