package canon

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"unsafe"
)

// DecodeJSON resets x and fills it from canonical JSON.
func (x *EmbeddingRequest) DecodeJSON(data []byte) error {
	*x = EmbeddingRequest{}
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("embedding request", err)
}

func (x *EmbeddingRequest) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "model":
			x.Model, err = d.str(v)
		case "input":
			x.Input, err = d.strings(v)
		case "dimensions":
			x.Dimensions, err = d.int(v)
		case "encoding_format":
			x.EncodingFormat, err = d.str(v)
		case "user":
			x.User, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// DecodeJSON resets x and fills it from canonical JSON. The document is
// mostly numbers, so Model gets a copy of its own rather than keeping the
// decoder's copy of the whole document alive.
func (x *EmbeddingResponse) DecodeJSON(data []byte) error {
	*x = EmbeddingResponse{}
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("embedding response", err)
}

func (x *EmbeddingResponse) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "model":
			x.Model, err = d.str(v)
			x.Model = strings.Clone(x.Model)
		case "vectors":
			x.Vectors, err = d.vectors(v)
		case "usage":
			x.Usage, err = d.usage(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// vectors decodes an array of vectors, each the base64 of little-endian
// float32s (as AppendJSON writes them) or an array of numbers (null
// elements are zero), into one allocation for the numbers (each vector's
// capacity ends with it) and one for the slices.
func (d *decoder) vectors(i int) ([][]float32, error) {
	n, j, err := d.array(i)
	if err != nil || n == 0 {
		return nil, err
	}
	if d.t[j].kind == kStr {
		return d.vectors64(n, j)
	}
	total := 0
	for k, e := 0, j; k < n; k, e = k+1, d.next(e) {
		m, _, err := d.array(e)
		if err != nil {
			return nil, index(k, err)
		}
		total += m
	}
	all := make([]float32, total)
	out := make([][]float32, n)
	for k := range out {
		m, e, _ := d.array(j)
		vec := all[:m:m]
		all = all[m:]
		for l := range vec {
			f, _, err := d.float(e, 32)
			if err != nil {
				return nil, index(k, index(l, err))
			}
			vec[l] = float32(f)
			e++ // a number or null: one token

		}
		out[k] = vec
		j = d.next(j)
	}
	return out, nil
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *Error) DecodeJSON(data []byte) error {
	*x = Error{}
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("error", err)
}

func (x *Error) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "status":
			x.Status, err = d.int(v)
		case "type":
			var s string
			s, err = d.str(v)
			x.Type = ErrorType(s)
		case "code":
			x.Code, err = d.str(v)
		case "message":
			x.Message, err = d.str(v)
		case "param":
			x.Param, err = d.str(v)
		case "request_id":
			x.RequestID, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ModelList) DecodeJSON(data []byte) error {
	*x = ModelList{}
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("model list", err)
}

func (x *ModelList) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		if d.key(j) == "models" {
			if x.Models, err = slice(d, j+1, (*Model).decode); err != nil {
				return d.field(j, err)
			}
		}
	}
	return err
}

func (m *Model) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "id":
			m.ID, err = d.str(v)
		case "owned_by":
			m.OwnedBy, err = d.str(v)
		case "created":
			m.Created, _, err = d.int64(v)
		case "context_length":
			m.ContextLength, err = d.int(v)
		case "backends":
			m.Backends, err = d.strings(v)
		case "loaded":
			m.Loaded, err = d.boolean(v)
		case "size_bytes":
			m.SizeBytes, _, err = d.int64(v)
		case "family":
			m.Family, err = d.str(v)
		case "capabilities":
			m.Capabilities, err = d.strings(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *Discovery) DecodeJSON(data []byte) error {
	*x = Discovery{}
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("discovery", err)
}

func (x *Discovery) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "healthy":
			x.Healthy = nil
			if d.t[v].kind != kNull {
				var b bool
				if b, err = d.boolean(v); err == nil {
					x.Healthy = &b
				}
			}
		case "models":
			x.Models, err = slice(d, v, (*DiscoveredModel).decode)
		case "version":
			x.Version, err = d.str(v)
		case "has_load":
			x.HasLoad, err = d.boolean(v)
		case "running":
			x.Running, _, err = d.float(v, 64)
		case "waiting":
			x.Waiting, _, err = d.float(v, 64)
		case "kv_cache_usage":
			x.KVCacheUsage, _, err = d.float(v, 64)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

func (m *DiscoveredModel) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "name":
			m.Name, err = d.str(v)
		case "loaded":
			m.Loaded, err = d.boolean(v)
		case "context_length":
			m.ContextLength, err = d.int(v)
		case "size_bytes":
			m.SizeBytes, _, err = d.int64(v)
		case "family":
			m.Family, err = d.str(v)
		case "capabilities":
			m.Capabilities, err = d.strings(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

var errVector64 = errors.New("not the base64 of float32 values")

// vectors64 decodes n base64 vectors starting at token j.
func (d *decoder) vectors64(n, j int) ([][]float32, error) {
	total := 0
	for k, e := 0, j; k < n; k, e = k+1, d.next(e) {
		s, err := d.str(e)
		if err != nil {
			return nil, index(k, err)
		}
		m := b64Len(s)
		if m%4 != 0 {
			return nil, index(k, errVector64)
		}
		total += m / 4
	}
	all := make([]float32, total)
	out := make([][]float32, n)
	var raw []byte
	for k, e := 0, j; k < n; k, e = k+1, d.next(e) {
		s, _ := d.str(e)
		var err error
		raw, err = base64.StdEncoding.AppendDecode(raw[:0], unsafe.Slice(unsafe.StringData(s), len(s)))
		if err != nil || len(raw)%4 != 0 {
			return nil, index(k, errVector64)
		}
		m := len(raw) / 4
		vec := all[:m:m]
		all = all[m:]
		for l := range vec {
			vec[l] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*l:]))
		}
		out[k] = vec
	}
	return out, nil
}

// b64Len is the number of bytes padded standard base64 s decodes to (-1
// when its length is not a multiple of 4).
func b64Len(s string) int {
	if len(s)%4 != 0 {
		return -1
	}
	n := len(s) / 4 * 3
	for i := len(s) - 1; i >= 0 && i >= len(s)-2 && s[i] == '='; i-- {
		n--
	}
	return n
}
