// Package matrix is the client-dialect × backend-engine conformance
// matrix: the end-to-end tests that drive an official client SDK through
// the gateway mark which cell they prove (Mark), and the generator
// (cmd/conformance-matrix) turns a `go test -json` run into the table in
// docs/conformance.md. A cell is "pass" only when every test marking it
// passed in that run; a cell no test marks is shown as a gap, never
// filled by hand.
package matrix

import (
	"fmt"
	"strings"
	"testing"
)

// Dialects, engines and features of the matrix, in table order.
var (
	// responses is OpenAI's Responses API (/v1/responses), a dialect of
	// its own beside Chat Completions ("openai").
	Dialects = []string{"openai", "responses", "anthropic", "ollama", "gemini"}
	Engines  = []string{"vllm", "ollama"}
	// stored-responses and conversations are state the gateway keeps for
	// the client: Responses' store, previous_response_id chaining and
	// retrieval, and the Conversations API.
	Features = []string{"text", "stream", "tools", "streamed-tools", "thinking", "json-schema", "images", "embeddings", "completions", "rerank", "stored-responses", "conversations", "errors"}
)

// NotInDialect are the features a dialect has no API for (Anthropic has no
// embeddings, legacy completions or rerank; Ollama no rerank; the
// Responses API is generation only, OpenAI's other endpoints serve the
// rest; only the Responses API keeps state): shown as such, not as gaps.
var NotInDialect = map[[2]string]bool{
	{"responses", "embeddings"}:  true,
	{"responses", "completions"}: true,
	{"responses", "rerank"}:      true,
	{"anthropic", "embeddings"}:  true,
	{"anthropic", "completions"}: true,
	{"anthropic", "rerank"}:      true,
	{"ollama", "rerank"}:         true,
	// Gemini (plugins/gemini) has no legacy completions or rerank.
	{"gemini", "completions"}: true,
	{"gemini", "rerank"}:      true,
}

func init() {
	for _, d := range []string{"openai", "anthropic", "ollama", "gemini"} {
		NotInDialect[[2]string{d, "stored-responses"}] = true
		NotInDialect[[2]string{d, "conversations"}] = true
	}
}

// Notes explain what a cell proves when it is not the feature working
// (an engine without the capability must answer a clear 400).
var Notes = map[[3]string]string{
	{"openai", "rerank", "ollama"}: "Ollama cannot rerank or score: the proven behaviour is a 400 in OpenAI's shape saying so",
}

// Prefix starts the log line that marks a cell.
const Prefix = "matrix-cell "

// Mark records that t proves the cell (dialect, feature, engine). It panics
// on a name outside the matrix, so a typo cannot invent a cell.
func Mark(t testing.TB, dialect, feature, engine string) {
	t.Helper()
	for _, c := range [][2]any{{dialect, Dialects}, {feature, Features}, {engine, Engines}} {
		if !contains(c[1].([]string), c[0].(string)) {
			panic(fmt.Sprintf("matrix: %q is not one of %v", c[0], c[1]))
		}
	}
	t.Log(Prefix + dialect + " " + feature + " " + engine)
}

// Engine names the engine of a test model: the gateway tests serve
// vLLM-flavoured and Ollama-flavoured backends.
func Engine(isOllama bool) string {
	if isOllama {
		return "ollama"
	}
	return "vllm"
}

// ParseMark returns the cell a log line marks.
func ParseMark(line string) (dialect, feature, engine string, ok bool) {
	i := strings.Index(line, Prefix)
	if i < 0 {
		return "", "", "", false
	}
	f := strings.Fields(line[i+len(Prefix):])
	if len(f) != 3 {
		return "", "", "", false
	}
	return f[0], f[1], f[2], true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
