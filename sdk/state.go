package sdk

import (
	"encoding/binary"
	"errors"
)

// StateWriter builds a compact binary state blob: uvarints and
// length-prefixed strings, read back in the same order by StateReader.
// Start a blob with a version byte so a newer plugin can read older blobs.
type StateWriter struct{ B []byte }

// Uint appends an unsigned integer.
func (w *StateWriter) Uint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }

// Int appends a signed integer.
func (w *StateWriter) Int(v int64) { w.B = binary.AppendVarint(w.B, v) }

// Bool appends a boolean.
func (w *StateWriter) Bool(v bool) {
	if v {
		w.B = append(w.B, 1)
	} else {
		w.B = append(w.B, 0)
	}
}

// String appends a length-prefixed string.
func (w *StateWriter) String(s string) {
	w.B = binary.AppendUvarint(w.B, uint64(len(s)))
	w.B = append(w.B, s...)
}

// ErrState reports a truncated or corrupt state blob.
var ErrState = errors.New("sdk: corrupt stream state")

// StateReader reads what a StateWriter wrote. After the first error every
// read returns a zero value and Err reports ErrState, so callers check once.
type StateReader struct {
	B   []byte
	err error
}

// Err returns ErrState if any read failed.
func (r *StateReader) Err() error { return r.err }

// Uint reads an unsigned integer.
func (r *StateReader) Uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.err = ErrState
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Int reads a signed integer.
func (r *StateReader) Int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.B)
	if n <= 0 {
		r.err = ErrState
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Bool reads a boolean.
func (r *StateReader) Bool() bool {
	if r.err != nil || len(r.B) == 0 {
		r.err = ErrState
		return false
	}
	v := r.B[0] == 1
	r.B = r.B[1:]
	return v
}

// String reads a length-prefixed string.
func (r *StateReader) String() string {
	n := r.Uint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.B)) {
		r.err = ErrState
		return ""
	}
	s := string(r.B[:n])
	r.B = r.B[n:]
	return s
}
