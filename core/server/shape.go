package server

// Stream shapes (ABI 2.10, sdk/shape): a fused stream call may leave the
// shape of the events that follow, the literal bytes of an event around
// its strings and the client output they make. The relay translates each
// next event that matches it here, with no plugin call: a slow stream's
// lone token event or a full-speed batch costs a compare and a copy
// instead of a WebAssembly call (about 13 µs an event in
// BenchmarkDefaultPath/vllm/stream1 against 0.1 µs in
// sdk/shape's BenchmarkApply). The first event that does not match, and
// the events after it in its batch, go to the plugin as before, whose
// result replaces the shape or drops it; the stream's end call always
// goes to the plugin. The plugin's promise that a matching event changes
// no state and carries no usage, finish or end is what lets the relay
// skip the call; core/pluginhost/conformance checks it on the plugin's
// goldens.

// applyShape translates list's leading events that match the stream
// shape: their client bytes (ex.shapeOut), and the events left for the
// plugin. Their output estimate is counted as the plugin would report it.
func (ex *exchange) applyShape(list []byte) (out, rest []byte) {
	out, rest, n, tokens := ex.shape.ApplyList(ex.shapeOut[:0], list)
	ex.shapeOut = out
	ex.outEst += int64(tokens)
	ex.shaped += n
	return out, rest
}

// keepShape takes the shape a call left (b, aliasing the call buffers),
// or drops the current one when it left none. A shape the host cannot
// read is dropped: the plugin is then called for every batch, as a
// plugin that leaves none is.
func (ex *exchange) keepShape(b []byte) {
	if len(b) == 0 {
		ex.shape.Reset()
		return
	}
	if err := ex.shape.Parse(b); err != nil {
		return
	}
	ex.shapeBuf = ex.shape.Clone(ex.shapeBuf)
}
