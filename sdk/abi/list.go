package abi

import (
	"bytes"
	"encoding/binary"
)

// List-valued meta. A meta value that holds several names (MetaModelCaps)
// is the names joined by commas, with no spaces and no empty names. The
// pair is written in place by AppendMetaList, rather than joined into a
// string first, and read by MetaListHas or NextListItem without copying.

// AppendMetaList appends one pair of key whose value is values joined by
// commas (an empty list: an empty value). It allocates nothing beyond
// growing dst.
func AppendMetaList(dst []byte, key string, values []string) []byte {
	n := 0
	for i, v := range values {
		if i > 0 {
			n++
		}
		n += len(v)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	for i, v := range values {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, v...)
	}
	return dst
}

// NextListItem splits the first item off a list value as AppendMetaList
// writes it, spaces around it trimmed (so a hand-written "a, b" reads the
// same); ok is false at the end of the list.
func NextListItem(list []byte) (item, rest []byte, ok bool) {
	if len(list) == 0 {
		return nil, nil, false
	}
	i := bytes.IndexByte(list, ',')
	if i < 0 {
		return bytes.TrimSpace(list), nil, true
	}
	return bytes.TrimSpace(list[:i]), list[i+1:], true
}

// MetaListHas reports whether the list value holds name.
func MetaListHas(list []byte, name string) bool {
	for {
		item, rest, ok := NextListItem(list)
		if !ok {
			return false
		}
		if string(item) == name {
			return true
		}
		list = rest
	}
}
