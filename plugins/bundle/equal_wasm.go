//go:build wasm

package bundle

func equal(a, b []byte) bool { return equalWords(a, b) }
