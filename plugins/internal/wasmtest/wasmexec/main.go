// Command wasmexec runs a GOOS=wasip1 test binary in wazero with the
// plugin ABI's host imports (mr_v2.log and the float functions) provided, so a plugin package's
// tests and benchmarks can run inside WebAssembly, where plugins run:
//
//	go build -o /tmp/wasmexec ./plugins/internal/wasmtest/wasmexec
//	GOOS=wasip1 GOARCH=wasm go test -exec /tmp/wasmexec -run '^$' -bench . -benchmem ./plugins/bundle
//
// (a plain WASI runtime cannot: the SDK's wasip1 build imports mr_v2.log).
// The whole file system is mounted, the environment is inherited (PWD
// included, which Go's wasip1 port uses as its working directory), and
// plugin log lines go to stderr. Guest allocations show in -benchmem as
// they do natively: the Go runtime counting them runs inside the guest.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmexec module.wasm [args...]")
		os.Exit(2)
	}
	ctx := context.Background()
	bin, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cache, err := wazero.NewCompilationCacheWithDir(os.TempDir() + "/wasmexec-cache")
	if err != nil {
		cache = wazero.NewCompilationCache()
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if err := wasmtest.HostModule(ctx, rt, func(level int32, msg []byte) {
		fmt.Fprintf(os.Stderr, "plugin log %d: %s\n", level, msg)
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg := wazero.NewModuleConfig().
		WithArgs(os.Args[1:]...).
		WithStdin(os.Stdin).WithStdout(os.Stdout).WithStderr(os.Stderr).
		WithFSConfig(wazero.NewFSConfig().WithDirMount("/", "/")).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(randReader{})
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			cfg = cfg.WithEnv(k, v)
		}
	}
	_, err = rt.InstantiateWithConfig(ctx, bin, cfg)
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(int(exit.ExitCode()))
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type randReader struct{}

func (randReader) Read(p []byte) (int, error) {
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Read(p)
}
