//go:build !wasip1

package sdk

import "github.com/mindrouter/mindrouter/sdk/f32json"

// Natively the codec runs in place: there is no host to ask.

func parseFloat32s(dst []float32, src []byte) ([]float32, error) {
	return f32json.Parse(dst, src)
}

func appendFloat32s(dst []byte, vec []float32, s f32json.Style) []byte {
	return f32json.Append(dst, vec, s)
}
