package sdk

import "github.com/mindrouter/mindrouter/sdk/canon"

// StreamErrorEncoder is implemented by translators whose stream's last
// event depends on the stream so far (OpenAI Responses' response.failed
// carries the next sequence number and the output so far). For an error
// that ends an open stream (meta "stream" = "1") the SDK calls it instead
// of EncodeError, with the stream's state as stream_encode left it (ABI
// 2.5: the host passes the translator's blob on that error_encode call;
// an older host passes none, and st.In is empty).
type StreamErrorEncoder interface {
	EncodeStreamError(c *Call, st *State, e *canon.Error, out *Output) error
}

// FusedTranslatorState returns the translator's part of a fused stream's
// state blob (the layout in the package doc), for a host that ends a
// fused stream with an unfused error_encode call; nil when the blob is
// empty or malformed.
func FusedTranslatorState(blob []byte) []byte {
	var fs fusedState
	if len(blob) == 0 || fs.parse(blob) != nil {
		return nil
	}
	return fs.translator
}
