package gateway

import (
	"fmt"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// BenchmarkChatAudit is BenchmarkChat/gateway with the audit off, on into
// the embedded sink (make run's), and on into ClickHouse, content kept
// (the default): the audit's added latency per request is the difference
// from "off". The recorder's own goroutines (group commit, batch writes)
// run beside the requests, so on a small machine their CPU shows here too.
func BenchmarkChatAudit(b *testing.B) {
	t := &testing.T{}
	body := []byte(`{"model":"` + vllmModel + `","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`)
	stream := append(body[:len(body)-1:len(body)-1], `,"stream":true}`...)
	for _, tc := range []struct{ name, yaml string }{
		{"off", "audit: {enabled: false}\n"},
		{"embedded", ""},
		{"clickhouse", "clickhouse"},
	} {
		y := tc.yaml
		if y == "clickhouse" {
			ch := testsvc.StartClickHouse(b)
			y = fmt.Sprintf("audit: {clickhouse: {addr: [%q], database: %q}}\n", ch.Addr, ch.Database)
		}
		e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n"+y)
		b.Run(tc.name+"/plain", func(b *testing.B) {
			benchPost(b, e.base+"/v1/chat/completions", body, "Bearer "+adminKey)
		})
		b.Run(tc.name+"/stream", func(b *testing.B) {
			benchPost(b, e.base+"/v1/chat/completions", stream, "Bearer "+adminKey)
		})
	}
}
