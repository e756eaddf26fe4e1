package pluginhost

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// The Hosts of one process share their wazero Runtimes and compiled
// modules: one Runtime per (compilation cache, isolation class) and one
// CompiledModule per (Runtime, sha256 of the bytes), each reference-counted
// and closed with its last user. A gateway has one Host, so this changes
// nothing there (a hot reload still compiles changed bytes once); a test
// process starts hundreds of gateways, and wazero's CompileModule decodes
// and validates the bytes before it looks in its compilation cache (about
// 2 s a gateway under -race for the default plugins). Compilation is
// serialised process-wide: wazero's cache is not safe against concurrent
// compiles of the same bytes (wazero#2459, #2547), and compiling uses every
// core. Nothing per-Host lives in a Runtime: its host functions find the
// calling plugin's log through the module (guestSinks) or the call's
// context.
var shared = struct {
	mu       sync.Mutex
	caches   map[string]wazero.CompilationCache // by cache directory; "" in memory
	runtimes map[runtimeKey]*sharedRuntime
	modules  map[compiledKey]*compiled
	compiles uint64 // CompileModule calls (tests)
}{
	caches:   map[string]wazero.CompilationCache{},
	runtimes: map[runtimeKey]*sharedRuntime{},
	modules:  map[compiledKey]*compiled{},
}

// guestSinks maps each guest module to its plugin's log sink (hostLog).
var guestSinks sync.Map // api.Module -> *logSink

type runtimeKey struct {
	cacheDir string // absolute; "" for the in-memory cache
	class    rtClass
}

type sharedRuntime struct {
	rt   wazero.Runtime
	refs int // compiled modules of it
}

// compile returns the compiled module of (class, sha), compiling it once
// per process, and counts a reference for h.
func (h *Host) compile(ctx context.Context, class rtClass, sha string, wasm []byte) (*compiled, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if h.closed.Load() {
		return nil, ErrClosed
	}
	rk := runtimeKey{h.cacheDir, class}
	key := compiledKey{rk, sha}
	if c := shared.modules[key]; c != nil {
		c.refs++
		return c, nil
	}
	sr := shared.runtimes[rk]
	if sr == nil {
		cache, err := sharedCacheLocked(h.cacheDir)
		if err != nil {
			return nil, err
		}
		rt, err := newRuntime(context.Background(), class, cache)
		if err != nil {
			return nil, err
		}
		sr = &sharedRuntime{rt: rt}
		shared.runtimes[rk] = sr
	}
	start := time.Now()
	cctx := experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	shared.compiles++
	cm, err := sr.rt.CompileModule(cctx, wasm)
	if err != nil {
		if sr.refs == 0 {
			sr.rt.Close(context.Background())
			delete(shared.runtimes, rk)
		}
		return nil, fmt.Errorf("compile: %w", err)
	}
	h.logger.Debug("plugin compiled", slog.String("sha256", sha[:12]), slog.Float64("dur_ms", float64(time.Since(start).Microseconds())/1000))
	sr.refs++
	c := &compiled{key: key, rt: sr.rt, cm: cm, refs: 1}
	shared.modules[key] = c
	return c, nil
}

// sharedCache returns the process's compilation cache in dir ("": in
// memory), opening it once. Caches are kept for the process's life.
func sharedCache(dir string) (wazero.CompilationCache, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	return sharedCacheLocked(dir)
}

func sharedCacheLocked(dir string) (wazero.CompilationCache, error) {
	if c := shared.caches[dir]; c != nil {
		return c, nil
	}
	c := wazero.NewCompilationCache()
	if dir != "" {
		var err error
		if c, err = wazero.NewCompilationCacheWithDir(dir); err != nil {
			return nil, fmt.Errorf("pluginhost: compilation cache: %w", err)
		}
	}
	shared.caches[dir] = c
	return c, nil
}

// releaseCompiled drops a reference to c; the last closes the module, and
// the last module of a Runtime closes the Runtime. By then the versions
// that used it are destroyed, so nothing instantiates from it any more.
func (h *Host) releaseCompiled(c *compiled) {
	if c == nil {
		return
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if c.refs--; c.refs > 0 {
		return
	}
	delete(shared.modules, c.key)
	c.cm.Close(context.Background())
	rk := c.key.rt
	if sr := shared.runtimes[rk]; sr != nil {
		if sr.refs--; sr.refs == 0 {
			sr.rt.Close(context.Background())
			delete(shared.runtimes, rk)
		}
	}
}

// sharedCompiles is how many times this process has compiled (decoded,
// validated, and compiled or loaded from the cache) a module.
func sharedCompiles() uint64 {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	return shared.compiles
}
