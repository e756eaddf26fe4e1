module github.com/mindrouter/mindrouter

go 1.26.0

// The SDK is its own module, so plugin authors do not inherit the gateway's
// dependencies; the gateway uses the copy in this tree.
replace github.com/mindrouter/mindrouter/sdk => ./sdk

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/google/go-cmp v0.7.0
	github.com/mindrouter/mindrouter/sdk v0.0.0-00010101000000-000000000000
	github.com/openai/openai-go/v3 v3.98.0
	github.com/tetratelabs/wazero v1.12.0
	github.com/valyala/fasthttp v1.78.0
	github.com/valyala/fastjson v1.6.10
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
