package sdk

import "github.com/mindrouter/mindrouter/sdk/f32json"

// Float text. An embedding vector as JSON numbers costs thousands of
// float ⇄ decimal conversions, which Go runs about ten times slower inside
// WebAssembly than natively. AppendFloat32s and ParseFloat32s do them in
// the host (ABI 2.6, mr_v2.f32_format and mr_v2.f32_parse) when the plugin
// runs as a .wasm, and natively otherwise, with the same code (package
// f32json) and so the same bytes. A plugin that writes or reads vectors as
// decimal text should use them rather than strconv.

// Float styles (see f32json.Style).
const (
	FloatG  = f32json.StyleG  // strconv 'g', shortest: 1e-07
	FloatJS = f32json.StyleJS // encoding/json's float32 form: 1e-7, 0.000001
)

// ParseFloat32s appends the numbers of the JSON array src (whitespace
// allowed) to dst, each rounded once to the nearest float32. An element
// that is not a JSON number (NaN, a string, a nested array) or is beyond
// float32's range is an error (*f32json.Error, which names the element);
// dst is then returned unchanged in length.
func ParseFloat32s(dst []float32, src []byte) ([]float32, error) {
	return parseFloat32s(dst, src)
}

// AppendFloat32s writes vec as a JSON array of numbers in style s, each the
// shortest decimal that reads back as the same float32; a non-finite
// value, which JSON cannot carry, is written as 0.
func AppendFloat32s(dst []byte, vec []float32, s f32json.Style) []byte {
	return appendFloat32s(dst, vec, s)
}
