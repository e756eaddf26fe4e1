package abi

import (
	"strings"
	"testing"
)

func TestMetaList_RoundTrip(t *testing.T) {
	for _, values := range [][]string{
		{"completion", "tools", "vision"},
		{"tools"},
		{},
		{"", "x"}, // an empty name is written as is; readers skip nothing
	} {
		// The same bytes as AppendMeta of the joined string, after a pair
		// already in the list.
		got := AppendMetaList(AppendMeta(nil, MetaRoute, "chat"), MetaModelCaps, values)
		want := AppendMeta(AppendMeta(nil, MetaRoute, "chat"), MetaModelCaps, strings.Join(values, ","))
		if string(got) != string(want) {
			t.Fatalf("%q: got %q, want %q", values, got, want)
		}
		v, ok := MetaGet(got, MetaModelCaps)
		if !ok || !ValidMeta(got) {
			t.Fatalf("%q: pair not found or list malformed", values)
		}
		var back []string
		for rest := v; ; {
			item, r, ok := NextListItem(rest)
			if !ok {
				break
			}
			back = append(back, string(item))
			rest = r
		}
		if strings.Join(back, ",") != strings.Join(values, ",") || len(values) > 0 && len(back) != len(values) {
			t.Errorf("%q: read back %q", values, back)
		}
		for _, name := range values {
			if name != "" && !MetaListHas(v, name) {
				t.Errorf("%q: %q not found", values, name)
			}
		}
		if MetaListHas(v, "vis") || MetaListHas(v, "tools,vision") {
			t.Errorf("%q: a part or a join of names was found", values)
		}
	}
}

func TestMetaListHas_Spaces(t *testing.T) {
	if !MetaListHas([]byte(" tools , vision"), "vision") || !MetaListHas([]byte("tools, vision"), "tools") || MetaListHas(nil, "") {
		t.Fatal("hand-written list misread")
	}
}
