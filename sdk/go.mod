module github.com/mindrouter/mindrouter/sdk

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/valyala/fastjson v1.6.10
)
