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

func TestManifestFind(t *testing.T) {
	b := Manifest{Name: "b", Kind: KindBundle, Components: []Manifest{
		{Name: "openai", Kind: KindTranslator, Format: "openai"},
		{Name: "vllm", Kind: KindAdapter, Format: "vllm"},
		{Name: "ollama", Kind: KindAdapter, Format: "ollama"}}}
	if i, m, ok := b.AdapterFor("ollama"); !ok || i != 2 || m.Name != "ollama" {
		t.Fatalf("AdapterFor ollama = %d %s %v", i, m.Name, ok)
	}
	if _, _, ok := b.AdapterFor("openai"); ok {
		t.Fatal("a translator is no adapter")
	}
	if i, _, ok := b.PartNamed("vllm"); !ok || i != 1 {
		t.Fatal("PartNamed vllm")
	}
	single := Manifest{Name: "vllm", Kind: KindAdapter, Format: "vllm"}
	if i, _, ok := single.AdapterFor("vllm"); !ok || i != 0 {
		t.Fatal("single AdapterFor")
	}
	if _, _, ok := single.PartNamed("x"); ok {
		t.Fatal("single PartNamed x")
	}
}
