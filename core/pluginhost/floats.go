package pluginhost

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/abi/hostfloat"
)

// The float text host functions (ABI 2.6), implemented by package
// hostfloat (sdk/abi/hostfloat, which the plugins' test harness wires into
// its own wazero runtime the same way): a plugin's embedding vectors as
// decimal numbers, formatted and parsed natively in the guest's memory.
// A bad pointer or length gets f32json.CodeMemory, never a trap or a read
// outside; they allocate nothing and touch only the calling instance's
// memory.

// ExportFloatFuncs adds mr_v2.f32_format and mr_v2.f32_parse to b, the
// builder of the mr_v2 host module.
func ExportFloatFuncs(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostF32Format), []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("style", "src", "n", "dst", "dst_cap").
		Export(abi.ImportF32Format).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostF32Parse), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("src", "len", "dst", "dst_cap").
		Export(abi.ImportF32Parse)
}

// hostF32Format is f32_format(style, src, n, dst, dst_cap) -> i64 on the
// calling instance's memory (hostfloat.Format).
func hostF32Format(_ context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(hostfloat.Format(mod.Memory(), uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4])))
}

// hostF32Parse is f32_parse(src, len, dst, dst_cap) -> i64 on the calling
// instance's memory (hostfloat.Parse).
func hostF32Parse(_ context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(hostfloat.Parse(mod.Memory(), uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])))
}
