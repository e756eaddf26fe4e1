//go:build race

package gateway

// raceFactor scales time bounds: the race detector slows byte loops (the
// native JSON scan) and WebAssembly calls about tenfold.
const raceFactor = 10
