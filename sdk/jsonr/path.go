package jsonr

import (
	"strconv"

	"github.com/valyala/fastjson"
)

// Error is a reading error: where (Path, e.g. "messages[3].content[1]";
// empty for the document itself) and what (Msg, e.g. "expected string,
// got number").
type Error struct {
	Path string
	Msg  string
}

// Error returns "path: msg", or msg for the document itself.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// typeError records that v is not of type want.
func (v Value) typeError(want string) {
	v.fail("expected " + want + ", got " + typeName(v.v))
}

func typeName(v *fastjson.Value) string {
	switch v.Type() {
	case fastjson.TypeObject:
		return "object"
	case fastjson.TypeArray:
		return "array"
	case fastjson.TypeString:
		return "string"
	case fastjson.TypeNumber:
		return "number"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "boolean"
	}
	return "null"
}

// fail records msg at v's path unless an error is recorded already.
func (v Value) fail(msg string) {
	if v.r == nil || v.r.err != nil {
		return
	}
	v.r.err = &Error{Path: v.path(), Msg: msg}
}

// frame is one step of a path: an object key, or an array index when
// idx >= 0.
type frame struct {
	key string
	idx int
}

// path builds v's path: its container's, found by a search from the root
// (containers are distinct nodes, unlike true, false and null), then v's
// own key or index. Only the error path pays for it.
func (v Value) path() string {
	var frames []frame
	if v.parent != nil {
		if !find(v.r.root, v.parent, &frames) {
			frames = frames[:0] // not under this root: name the last step only
		}
		frames = append(frames, frame{v.key, v.idx})
	} else if v.key != "" || v.idx >= 0 {
		frames = append(frames, frame{v.key, v.idx})
	}
	var b []byte
	for i, f := range frames {
		b = appendFrame(b, f, i == 0)
	}
	return string(b)
}

// find appends the path from cur to target to *frames and reports whether
// target is cur or under it.
func find(cur, target *fastjson.Value, frames *[]frame) bool {
	if cur == target {
		return true
	}
	switch cur.Type() {
	case fastjson.TypeArray:
		a, _ := cur.Array()
		for i, c := range a {
			*frames = append(*frames, frame{idx: i})
			if find(c, target, frames) {
				return true
			}
			*frames = (*frames)[:len(*frames)-1]
		}
	case fastjson.TypeObject:
		o, _ := cur.Object()
		found := false
		o.Visit(func(k []byte, c *fastjson.Value) {
			if found {
				return
			}
			*frames = append(*frames, frame{key: string(k), idx: -1})
			if found = find(c, target, frames); !found {
				*frames = (*frames)[:len(*frames)-1]
			}
		})
		return found
	}
	return false
}

// appendFrame writes ".key" (or "key" first), `["odd key"]` for keys that
// are not plain identifiers, or "[i]".
func appendFrame(b []byte, f frame, first bool) []byte {
	if f.idx >= 0 {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(f.idx), 10)
		return append(b, ']')
	}
	if !plainKey(f.key) {
		b = append(b, '[')
		b = strconv.AppendQuote(b, f.key)
		return append(b, ']')
	}
	if !first {
		b = append(b, '.')
	}
	return append(b, f.key...)
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
