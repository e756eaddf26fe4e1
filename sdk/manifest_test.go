package sdk

import "testing"

func TestManifestParts(t *testing.T) {
	single := Manifest{Name: "a", Kind: KindAdapter}
	if p := single.Parts(); len(p) != 1 || p[0].Name != "a" {
		t.Fatalf("single parts %+v", p)
	}
	if m, ok := single.Part(0); !ok || m.Name != "a" {
		t.Fatal("single part 0")
	}
	if _, ok := single.Part(1); ok {
		t.Fatal("single part 1")
	}
	b := Manifest{Name: "b", Kind: KindBundle, Components: []Manifest{{Name: "t", Kind: KindTranslator}, {Name: "v", Kind: KindAdapter}}}
	if p := b.Parts(); len(p) != 2 || p[1].Name != "v" {
		t.Fatalf("bundle parts %+v", p)
	}
	if m, ok := b.Part(1); !ok || m.Name != "v" {
		t.Fatal("bundle part 1")
	}
	if _, ok := b.Part(2); ok {
		t.Fatal("bundle part 2")
	}
}
