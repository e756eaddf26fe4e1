package responses

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// blobRef prefixes the image_url of a stored input_image whose data URL
// is kept as a blob: "mr-blob:sha256:<64 hex>". Clients may not send one.
const blobRef = "mr-blob:sha256:"

// appendValue appends v as JSON. fastjson's own MarshalTo writes a string
// it has unescaped with Go's quoting (\x01, \a), which is not JSON; here
// every string and key goes through jsonw.
func appendValue(dst []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		dst = append(dst, '{')
		first := true
		o.Visit(func(key []byte, vv *fastjson.Value) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = jsonw.Bytes(dst, key)
			dst = append(dst, ':')
			dst = appendValue(dst, vv)
		})
		return append(dst, '}')
	case fastjson.TypeArray:
		a, _ := v.Array()
		dst = append(dst, '[')
		for i, vv := range a {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, vv)
		}
		return append(dst, ']')
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return jsonw.Bytes(dst, s)
	}
	return v.MarshalTo(dst) // numbers (as parsed), true, false, null
}

// badInput is a 400 naming the parameter.
func badInput(param, format string, args ...any) *apierr.Error {
	e := apierr.New(canon.ErrInvalidRequest, "invalid_value", fmt.Sprintf(format, args...))
	e.Param = param
	return e
}

// prepared is one input item made ready: live is what the translator
// gets (images inline), stored what is kept (large images by reference).
type prepared struct {
	id           string
	live, stored []byte
}

// blobSet gathers the blobs an exchange writes and the hashes its stored
// items refer to.
type blobSet struct {
	blobs []store.Blob
	refs  []string
}

func (b *blobSet) refer(hash string) {
	for _, h := range b.refs {
		if h == hash {
			return
		}
	}
	b.refs = append(b.refs, hash)
}

// idPrefix names new ids by item type, as OpenAI does.
func idPrefix(typ []byte) string {
	switch string(typ) {
	case "message":
		return "msg_"
	case "function_call":
		return "fc_"
	case "function_call_output":
		return "fco_"
	case "reasoning":
		return "rs_"
	}
	return "item_"
}

// prepareItem normalises one client item in place: a message gets its
// "type", a string content becomes one text part (as OpenAI lists it),
// and an item without an id gets one. Then it bounds the item and moves
// large data: URL images to blobs. at names the item ("input[3]").
func (k *Keeper) prepareItem(a *fastjson.Arena, v *fastjson.Value, at itemName, bs *blobSet) (prepared, error) {
	if v.Type() != fastjson.TypeObject {
		param := at.String()
		return prepared{}, badInput(param, "Invalid type for '%s': expected an object, but got %s.", param, v.Type())
	}
	typ := v.Get("type")
	if typ == nil && v.Get("role") != nil {
		typ = a.NewString("message")
		v.Set("type", typ)
	}
	var typName []byte
	if typ != nil {
		if typ.Type() != fastjson.TypeString {
			param := at.String()
			return prepared{}, badInput(param+".type", "Invalid type for '%s.type': expected a string.", param)
		}
		typName, _ = typ.StringBytes()
	}
	if string(typName) == "message" {
		if c := v.Get("content"); c != nil && c.Type() == fastjson.TypeString {
			text, _ := c.StringBytes()
			part := a.NewObject()
			if string(v.GetStringBytes("role")) == "assistant" {
				part.Set("type", a.NewString("output_text"))
				part.Set("text", a.NewStringBytes(text))
				part.Set("annotations", a.NewArray())
			} else {
				part.Set("type", a.NewString("input_text"))
				part.Set("text", a.NewStringBytes(text))
			}
			parts := a.NewArray()
			parts.SetArrayItem(0, part)
			v.Set("content", parts)
		}
	}
	var id string
	if iv := v.Get("id"); iv != nil {
		b, err := iv.StringBytes()
		if err != nil || !validID(b) {
			param := at.String()
			return prepared{}, badInput(param+".id", "Invalid '%s.id': an id is 1 to 128 letters, digits, '_' or '-'.", param)
		}
		id = string(b)
	} else {
		id = newID(idPrefix(typName), 16)
		v.Set("id", a.NewString(id))
	}
	live := appendValue(nil, v)
	if len(live) > k.opts.MaxItemBytes {
		param := at.String()
		return prepared{}, badInput(param, "Item '%s' is %d bytes, over this gateway's limit of %d bytes per item.",
			param, len(live), k.opts.MaxItemBytes)
	}
	moved, err := k.moveImages(a, v, at, bs)
	if err != nil {
		return prepared{}, err
	}
	stored := live
	if moved {
		stored = appendValue(nil, v)
	}
	return prepared{id: id, live: live, stored: stored}, nil
}

// moveImages replaces, anywhere in v, the image_url of an input_image
// that is a data: URL over the blob threshold by a blob reference, adding
// the blob to bs. It reports whether it replaced any.
func (k *Keeper) moveImages(a *fastjson.Arena, v *fastjson.Value, at itemName, bs *blobSet) (bool, error) {
	moved := false
	switch v.Type() {
	case fastjson.TypeArray:
		items, _ := v.Array()
		for _, it := range items {
			m, err := k.moveImages(a, it, at, bs)
			if err != nil {
				return false, err
			}
			moved = moved || m
		}
	case fastjson.TypeObject:
		if string(v.GetStringBytes("type")) == "input_image" {
			if u := v.Get("image_url"); u != nil && u.Type() == fastjson.TypeString {
				url, _ := u.StringBytes()
				if bytes.HasPrefix(url, []byte(blobRef)) {
					param := at.String()
					return false, badInput(param, "Invalid image_url in '%s': the mr-blob: scheme is reserved.", param)
				}
				if bytes.HasPrefix(url, []byte("data:")) && len(url) > k.opts.BlobThreshold {
					sum := sha256.Sum256(url)
					hash := hex.EncodeToString(sum[:])
					bs.blobs = append(bs.blobs, store.Blob{Hash: hash, Data: bytes.Clone(url)})
					bs.refer(hash)
					v.Set("image_url", a.NewString(blobRef+hash))
					moved = true
				}
			}
		}
		o, _ := v.Object()
		var err error
		o.Visit(func(key []byte, vv *fastjson.Value) {
			if err != nil || vv.Type() != fastjson.TypeObject && vv.Type() != fastjson.TypeArray {
				return
			}
			var m bool
			m, err = k.moveImages(a, vv, at, bs)
			moved = moved || m
		})
		if err != nil {
			return false, err
		}
	}
	return moved, nil
}

// resolver turns stored items back into live ones, reading each blob
// once per exchange.
type resolver struct {
	k     *Keeper
	ctx   context.Context
	cache map[string][]byte
	refs  *blobSet // hashes met, when the caller stores what it resolves
}

var errBlobGone = errors.New("a stored image is gone")

// resolve rewrites, anywhere in v, blob references back to their data
// URLs. It reports whether it changed anything.
func (r *resolver) resolve(a *fastjson.Arena, v *fastjson.Value) (bool, error) {
	changed := false
	switch v.Type() {
	case fastjson.TypeArray:
		items, _ := v.Array()
		for _, it := range items {
			c, err := r.resolve(a, it)
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
	case fastjson.TypeObject:
		if url := v.GetStringBytes("image_url"); bytes.HasPrefix(url, []byte(blobRef)) {
			hash := string(url[len(blobRef):])
			data, err := r.blob(hash)
			if err != nil {
				return false, err
			}
			v.Set("image_url", a.NewStringBytes(data))
			changed = true
		}
		o, _ := v.Object()
		var err error
		o.Visit(func(_ []byte, vv *fastjson.Value) {
			if err != nil || vv.Type() != fastjson.TypeObject && vv.Type() != fastjson.TypeArray {
				return
			}
			var c bool
			c, err = r.resolve(a, vv)
			changed = changed || c
		})
		if err != nil {
			return false, err
		}
	}
	return changed, nil
}

func (r *resolver) blob(hash string) ([]byte, error) {
	if d, ok := r.cache[hash]; ok {
		return d, nil
	}
	if r.refs != nil {
		r.refs.refer(hash)
	}
	b, err := r.k.st.Blob(r.ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.Wrap(canon.ErrInternal, "stored_image_missing", "a stored image of this history is gone", errBlobGone)
	}
	if err != nil {
		return nil, storeErr("read a stored image", err)
	}
	if r.cache == nil {
		r.cache = map[string][]byte{}
	}
	r.cache[hash] = b.Data
	return b.Data, nil
}

// liveJSON returns stored JSON (an item, or an array of items) with its
// blob references resolved; without any it is returned as it is.
func (r *resolver) liveJSON(p *fastjson.Parser, a *fastjson.Arena, stored []byte) ([]byte, error) {
	if !bytes.Contains(stored, []byte(blobRef)) {
		return stored, nil
	}
	v, err := p.ParseBytes(stored)
	if err != nil {
		return nil, storeErr("read stored items", err)
	}
	changed, err := r.resolve(a, v)
	if err != nil || !changed {
		return stored, err
	}
	return appendValue(nil, v), nil
}

// storeErr is a store failure as the client sees it: a 503 with
// Retry-After when the store cannot be reached (the client should retry,
// and nothing was generated or lost), else a 500 that names nothing
// inside.
func storeErr(what string, err error) error {
	cause := fmt.Errorf("responses: %s: %w", what, err)
	if store.Unavailable(err) {
		return errStoreDown(cause)
	}
	return apierr.Wrap(canon.ErrInternal, "internal_error", "internal error", cause)
}

// storeRetryAfter is the Retry-After, in seconds, of an answer the
// store's outage made: long enough for a connection pool to find a
// restarted or failed-over database.
const storeRetryAfter = 2

// errStoreDown is the 503 of a request the store could not serve.
func errStoreDown(cause error) *apierr.Error {
	e := apierr.Wrap(canon.ErrOverloaded, "store_unavailable",
		"The store that keeps responses and conversations is unavailable right now; retry shortly.", cause)
	e.RetryAfter = storeRetryAfter
	return e
}

// itemName names an item in an error: the parameter, and its index when
// the parameter is an array (i >= 0). The string is made only for an
// error.
type itemName struct {
	param string
	i     int
}

func (n itemName) String() string {
	if n.i < 0 {
		return n.param
	}
	return n.param + "[" + strconv.Itoa(n.i) + "]"
}
