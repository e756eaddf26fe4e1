//go:build !wasm

package canon

import "sync"

// decoders recycles decoders (their tapes) across the goroutines of a
// native host.
var decoders = sync.Pool{New: func() any { return newDecoder() }}

func getDecoder() *decoder { return decoders.Get().(*decoder) }

func putDecoder(d *decoder) { decoders.Put(d) }
