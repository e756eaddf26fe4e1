package gateway

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// BenchmarkContextCap is one non-streamed chat request near the context
// limit (700 words, max_tokens 500, a 1000-token window), so counted:
// "vllm-memo" by the vLLM backend's /tokenize, answered from the memo
// after the first request (the adapter's extra encode and a SHA-256 are
// what remains); "offline" by tiktoken, the backend having no /tokenize
// (asked once, then backed off). BenchmarkChat/gateway/plain is the same
// request far from the limit.
func BenchmarkContextCap(b *testing.B) {
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"` +
		strings.Repeat("word ", 700) + `"}],"max_tokens":500}`)
	for _, tc := range []struct {
		name       string
		noTokenize bool
	}{{"vllm-memo", false}, {"offline", true}} {
		b.Run(tc.name, func(b *testing.B) {
			t := &testing.T{}
			e := startEnv(t, fakellm.Config{MaxModelLen: 1000, Tokens: 16, NoTokenize: tc.noTokenize}, fakellm.Config{}, "log: {level: warn}\n")
			benchPost(b, e.base+"/v1/chat/completions", body, "Bearer "+adminKey)
			if n := e.vllm.Stats().Requests["/tokenize"]; n != 1 {
				b.Errorf("/tokenize called %d times, want 1", n)
			}
		})
	}
}
