package pluginhost

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// TestHosts_ShareCompiledModules: a second Host in the process loading the
// same bytes in the same class does not compile them again; closing the
// first leaves the second serving calls; the last release closes the
// module and its Runtime.
func TestHosts_ShareCompiledModules(t *testing.T) {
	cfg := func() *Config {
		return &Config{ABI: 2, CacheDir: cacheDir, Plugins: []PluginConfig{plugin("good", "good", "translator", ModeTrusted)}}
	}
	ctx := context.Background()
	a, err := New(ctx, cfg(), testDir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	va := a.Plugin("good").Pin()
	key := va.mod.key
	before := sharedCompiles()
	b, err := New(ctx, cfg(), testDir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := sharedCompiles() - before; n != 0 {
		t.Errorf("the second Host compiled %d modules, want 0 (shared)", n)
	}
	vb := b.Plugin("good").Pin()
	if vb.mod != va.mod {
		t.Error("the Hosts hold different compiled modules for the same bytes")
	}
	va.Release()
	vb.Release()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var out Result
	if err := b.Plugin("good").Call(ctx, abi.OpErrorEncode, errorInput, &out); err != nil {
		t.Fatalf("a call on the second Host after the first closed: %v", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	shared.mu.Lock()
	_, mod := shared.modules[key]
	_, rt := shared.runtimes[key.rt]
	shared.mu.Unlock()
	if mod {
		t.Error("the module is still in the registry after both Hosts closed")
	}
	if rt && !otherUsers(key.rt) {
		t.Error("the Runtime is still open after its last module was released")
	}
}

// otherUsers reports whether a module of another test (none run in
// parallel here, but the registry is the process's) keeps rk open.
func otherUsers(rk runtimeKey) bool {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for k := range shared.modules {
		if k.rt == rk {
			return true
		}
	}
	return false
}

// TestHosts_LogToTheirOwnHost: two Hosts share the plugin's Runtime and
// compiled module; each instance's mr_v2.log and stdout lines still reach
// the logger of the Host that runs it.
func TestHosts_LogToTheirOwnHost(t *testing.T) {
	ctx := context.Background()
	cfg := func() *Config {
		return &Config{ABI: 2, CacheDir: cacheDir, Plugins: []PluginConfig{plugin("bad", "bad", "translator", ModeTrusted)}}
	}
	ca := &countHandler{counts: map[string]int{}, reqIDs: map[string]int{}}
	cb := &countHandler{counts: map[string]int{}, reqIDs: map[string]int{}}
	a, err := New(ctx, cfg(), testDir, slog.New(ca))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := New(ctx, cfg(), testDir, slog.New(cb))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	var out Result
	in := decode("log")
	in.RequestID = 0xb
	if err := b.Plugin("bad").Call(ctx, abi.OpRequestDecode, in, &out); err != nil {
		t.Fatal(err)
	}
	ca.mu.Lock()
	na := ca.counts["log"]
	ca.mu.Unlock()
	cb.mu.Lock()
	nb, ids := cb.counts["log"], cb.reqIDs["000000000000000b"]
	cb.mu.Unlock()
	if na != 0 {
		t.Errorf("Host a logged %d of Host b's plugin's lines", na)
	}
	if nb == 0 || ids != nb {
		t.Errorf("Host b logged %d lines, %d with its request's id; want > 0, all", nb, ids)
	}
}
