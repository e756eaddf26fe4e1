package accounts

import (
	"sync"
	"time"
)

// Wrong keys that share an imported key's prefix cost an Argon2id run
// each (tens of milliseconds of a core and 64 MiB), and the negative
// cache cannot help: every new tail is a new hash. A key's owner sees its
// prefix, so anyone with an imported key could keep the CPU busy with
// wrong tails. prefixGate bounds that: after maxPrefixFailures wrong keys
// for one prefix within prefixWindow, the prefix's imported keys are not
// tried again until the window ends (the answer is 401, not cached as
// unknown). The right key stays usable from the cache; a right key not
// yet cached is refused until the window ends — the price of the bound,
// paid only under such an attack.
const (
	maxPrefixFailures = 8
	prefixWindow      = time.Minute
	// maxTrackedPrefixes bounds the gate's memory. Only prefixes that
	// matched a stored imported key are tracked, so a flood of random
	// prefixes adds nothing.
	maxTrackedPrefixes = 1 << 16
)

type prefixGate struct {
	mu sync.Mutex
	m  map[string]*prefixFails
}

type prefixFails struct {
	start int64 // window start (Authenticator.mono)
	n     int
}

// blocked reports whether prefix has used up its failures at mono.
func (g *prefixGate) blocked(prefix string, mono int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.m[prefix]
	return f != nil && mono-f.start < int64(prefixWindow) && f.n >= maxPrefixFailures
}

// fail counts one wrong key for prefix at mono.
func (g *prefixGate) fail(prefix string, mono int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[string]*prefixFails)
	}
	f := g.m[prefix]
	if f == nil || mono-f.start >= int64(prefixWindow) {
		if f == nil && len(g.m) >= maxTrackedPrefixes {
			g.sweep(mono)
			if len(g.m) >= maxTrackedPrefixes {
				return // every tracked window is live: count nothing new rather than grow
			}
		}
		f = &prefixFails{start: mono}
		g.m[prefix] = f
	}
	f.n++
}

// sweep drops ended windows. Called with g.mu held.
func (g *prefixGate) sweep(mono int64) {
	for p, f := range g.m {
		if mono-f.start >= int64(prefixWindow) {
			delete(g.m, p)
		}
	}
}
