//go:build !wasm

package bundle

import "bytes"

func equal(a, b []byte) bool { return bytes.Equal(a, b) }
