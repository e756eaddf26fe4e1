package main

import (
	"strings"
	"testing"
)

func TestReadRender(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Test":"TestA/vllm","Output":"    x_test.go:10: matrix-cell openai text vllm\n"}`,
		`{"Action":"output","Test":"TestA/ollama","Output":"    x_test.go:10: matrix-cell openai text ollama\n"}`,
		`{"Action":"output","Test":"TestB","Output":"    x_test.go:20: matrix-cell openai text ollama\n"}`,
		`{"Action":"output","Test":"TestC","Output":"    x_test.go:30: matrix-cell anthropic stream vllm\n"}`,
		`go: downloading something`,
		`{"Action":"pass","Test":"TestA/vllm"}`,
		`{"Action":"pass","Test":"TestA/ollama"}`,
		`{"Action":"fail","Test":"TestB"}`,
		`{"Action":"skip","Test":"TestC"}`,
	}, "\n")
	cells, failed, err := read(strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	if failed != 2 { // openai/text/ollama (TestB failed) and anthropic/stream/vllm (skipped)
		t.Fatalf("failed = %d", failed)
	}
	if c := cells[cellKey{"openai", "text", "vllm"}]; c == nil || c.failed || len(c.tests) != 1 {
		t.Fatalf("openai text vllm = %+v", c)
	}
	md := render(cells)
	for _, want := range []string{
		"| text | ✅ `TestA` | ❌ `TestA`<br>`TestB` (2 runs) |",
		"| stream | ❌ `TestC` | — |",
		"| images | — | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
}

// TestRender_Responses: the Responses dialect has its own section, with
// stored responses and conversations as cells to prove (n/a for the other
// dialects) and OpenAI's other endpoints as n/a.
func TestRender_Responses(t *testing.T) {
	in := `{"Action":"output","Test":"TestR","Output":"    x_test.go:10: matrix-cell responses stored-responses vllm\n"}` + "\n" +
		`{"Action":"pass","Test":"TestR"}`
	cells, failed, err := read(strings.NewReader(in), "")
	if err != nil || failed != 0 {
		t.Fatal(failed, err)
	}
	md := render(cells)
	_, sec, ok := strings.Cut(md, "## responses clients\n")
	if !ok {
		t.Fatalf("no Responses section in\n%s", md)
	}
	sec, _, _ = strings.Cut(sec, "## anthropic clients")
	for _, want := range []string{
		"| stored-responses | ✅ `TestR` | — |",
		"| conversations | — | — |",
		"| embeddings | n/a (no such API) | n/a (no such API) |",
		"| tools | — | — |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("missing %q in\n%s", want, sec)
		}
	}
	if !strings.Contains(md, "| conversations | n/a (no such API) | n/a (no such API) |") {
		t.Error("conversations is not n/a for the other dialects")
	}
}

// TestRead_PackageFilter: from a run over many packages, -pkg keeps only
// the gateway's tests, so a same-named failing test elsewhere does not
// fail a cell.
func TestRead_PackageFilter(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"m/gw","Test":"TestA","Output":"    x_test.go:10: matrix-cell openai text vllm\n"}`,
		`{"Action":"output","Package":"m/other","Test":"TestA","Output":"    x_test.go:10: matrix-cell openai text ollama\n"}`,
		`{"Action":"pass","Package":"m/gw","Test":"TestA"}`,
		`{"Action":"fail","Package":"m/other","Test":"TestA"}`,
	}, "\n")
	cells, failed, err := read(strings.NewReader(in), "m/gw")
	if err != nil || failed != 0 {
		t.Fatalf("failed = %d, err = %v", failed, err)
	}
	if c := cells[cellKey{"openai", "text", "vllm"}]; c == nil || c.failed {
		t.Fatalf("openai text vllm = %+v", c)
	}
	if c := cells[cellKey{"openai", "text", "ollama"}]; c != nil {
		t.Fatalf("another package's mark was read: %+v", c)
	}
	// Without -pkg each package's test keeps its own result.
	if _, failed, _ := read(strings.NewReader(in), ""); failed != 1 {
		t.Fatalf("without -pkg: failed = %d, want 1 (m/other's TestA)", failed)
	}
}
