module github.com/mindrouter/mindrouter/plugins/gemini

go 1.26.0

// The SDK is not published: a plugin outside the gateway's module points
// the SDK's module path at a checkout of it (see sdk/README.md).
replace github.com/mindrouter/mindrouter/sdk => ../../sdk

require (
	github.com/google/go-cmp v0.7.0
	github.com/mindrouter/mindrouter/sdk v0.0.0-00010101000000-000000000000
	github.com/valyala/fastjson v1.6.10
)
