package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// BenchmarkChatScheduler is BenchmarkChat/gateway/plain under each
// scheduler policy, in one run: the fair scheduler's cost on the request
// path (its fast path: a free slot and nobody waiting) beside first come,
// first served, and the direct call for the gateway's whole added cost.
func BenchmarkChatScheduler(b *testing.B) {
	t := &testing.T{}
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	for _, policy := range []string{"fair", "least_loaded"} {
		e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\naudit: {enabled: false}\nscheduler: {policy: "+policy+"}\n")
		b.Run(policy, func(b *testing.B) {
			benchPost(b, e.base+"/v1/chat/completions", body, "Bearer "+adminKey)
		})
		if policy == "least_loaded" {
			b.Run("direct", func(b *testing.B) {
				benchPost(b, e.vllmURL+"/v1/chat/completions", body, "")
			})
		}
		// The next policy's gateway runs alone: a second live gateway in
		// the process slowed whichever ran second by 20-50 %.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = e.gw.Close(ctx)
		cancel()
	}
}
