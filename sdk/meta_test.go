package sdk

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Call.MetaBytes indexes the ABI's keys on the first lookup; it must find
// what abi.MetaGet finds, in any list: repeated keys (the first wins),
// empty values, unknown keys, a malformed tail.
func TestCall_MetaIndex(t *testing.T) {
	keys := []string{abi.MetaRoute, abi.MetaKind, abi.MetaModel, abi.MetaStream, abi.MetaIncludeUsage, abi.MetaMaxTokens,
		abi.MetaID, abi.MetaCreated, abi.MetaStatus, abi.MetaProbe, abi.MetaContextLength, abi.MetaContentType, abi.MetaPath,
		abi.MetaMethod, "x", ""}
	vals := []string{"", "1", "chat", "a\x00b", "chatcmpl-1"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var m []byte
		for range rng.IntN(10) {
			m = abi.AppendMeta(m, keys[rng.IntN(len(keys))], vals[rng.IntN(len(vals))])
		}
		switch rng.IntN(4) {
		case 0:
			m = append(m, 1, 0, 0) // a truncated pair
		case 1:
			if len(m) > 0 {
				m = m[:rng.IntN(len(m))]
			}
		}
		c := &Call{meta: m}
		for range 2 { // indexed on the first pass
			for _, k := range keys {
				gv, gok := c.MetaBytes(k)
				wv, wok := abi.MetaGet(m, k)
				if gok != wok || !bytes.Equal(gv, wv) || c.Meta(k) != string(wv) {
					t.Fatalf("meta %q key %q: %q %v, want %q %v", m, k, gv, gok, wv, wok)
				}
			}
		}
	}
	var zero Call
	if v, ok := zero.MetaBytes(abi.MetaID); ok || v != nil {
		t.Error("zero Call has meta")
	}
}
