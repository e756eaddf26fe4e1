package jsonscan_test

import (
	"fmt"

	"github.com/mindrouter/mindrouter/core/jsonscan"
)

// Paths are compiled once; their indexes address Result.Values.
var spec = jsonscan.MustSpec("model", "stream", "stream_options.include_usage", "max_tokens")

const (
	pModel = iota
	pStream
	pIncludeUsage
	pMaxTokens
)

func Example() {
	body := []byte(`{"mo\u0064el":"qwen3-8b","messages":[{"role":"user","content":"hi"}],
		"stream":true,"stream_options":{"include_usage":true},"max_tokens":2e3}`)
	var res jsonscan.Result
	if err := jsonscan.Scan(body, spec, jsonscan.Limits{MaxDepth: 128, MaxValues: 1 << 20}, &res); err != nil {
		fmt.Println(err)
		return
	}
	if v, ok := res.Get(pModel); ok && v.Kind == jsonscan.String {
		model, _ := jsonscan.AppendString(nil, body, v)
		fmt.Printf("model %s (control characters: %v)\n", model, jsonscan.HasControl(model))
	}
	stream, _ := res.Values[pStream].Bool()
	usage, _ := res.Values[pIncludeUsage].Bool()
	maxTokens, _ := res.Values[pMaxTokens].Int(body)
	fmt.Println("stream", stream, "usage", usage, "max_tokens", maxTokens)
	fmt.Println("depth", res.Depth, "values", res.Count)

	err := jsonscan.Scan([]byte(`{"model":"m","messages":[[[[]]]]}`), spec, jsonscan.Limits{MaxDepth: 4}, &res)
	fmt.Println(err)
	// Output:
	// model qwen3-8b (control characters: false)
	// stream true usage true max_tokens 2000
	// depth 3 values 10
	// request body nests deeper than 4 levels
}
