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
	cells, failed, err := read(strings.NewReader(in))
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
