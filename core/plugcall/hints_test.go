package plugcall

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// The hints' meta is the ABI's pairs: the capabilities as one list value
// (abi.AppendMetaList), read back by the SDK's abi.MetaListHas.
func TestAppendHints(t *testing.T) {
	caps := []string{"completion", "tools", "vision"}
	got := appendHints(nil, Hints{ContextLength: 4096, MaxOutput: 100, Caps: caps})
	want := abi.AppendMeta(nil, abi.MetaContextLength, "4096")
	want = abi.AppendMeta(want, abi.MetaMaxOutput, "100")
	want = abi.AppendMeta(want, abi.MetaModelCaps, strings.Join(caps, ","))
	if string(got) != string(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	v, ok := abi.MetaGet(got, abi.MetaModelCaps)
	if !ok || !abi.MetaListHas(v, "vision") || abi.MetaListHas(v, "thinking") {
		t.Fatalf("caps read back as %q", v)
	}
	if m := appendHints(nil, Hints{}); len(m) != 0 {
		t.Fatalf("no hints: %q", m)
	}
}
