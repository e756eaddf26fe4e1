package openai

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestTokenize_Decode(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct {
		body  string
		texts []string
		tools int
	}{
		{`{"model":"m","prompt":"hello world"}`, []string{"hello world"}, 0},
		{`{"model":"m","prompt":["a","b"]}`, []string{"a", "b"}, 0},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"temperature":"ignored"}`, []string{"hi"}, 1},
	} {
		r := call(t, p, abi.OpRequestDecode, 0, nil, []byte(tc.body), "route", RouteTokenize)
		if r.Status != abi.StatusOK {
			t.Fatalf("%s: %s %s", tc.body, r.Status, r.Error)
		}
		var req canon.ChatRequest
		if err := req.DecodeJSON(r.Payload); err != nil {
			t.Fatal(err)
		}
		if req.Model != "m" || len(req.Messages) != len(tc.texts) || len(req.Tools) != tc.tools {
			t.Fatalf("%s: %+v", tc.body, req)
		}
		for i, want := range tc.texts {
			if got := req.Messages[i].Text(); got != want || req.Messages[i].Role != canon.RoleUser {
				t.Fatalf("%s: message %d = %q", tc.body, i, got)
			}
		}
	}
	for _, bad := range []string{`{"model":"m","prompt":5}`, `{"model":"m","prompt":["a",1]}`, `{"prompt":"x"}`, `{"model":"m"}`} {
		if r := call(t, p, abi.OpRequestDecode, 0, nil, []byte(bad), "route", RouteTokenize); r.Status != abi.StatusBadInput {
			t.Errorf("%s: %s", bad, r.Status)
		}
	}
}

func TestTokenize_Encode(t *testing.T) {
	for _, tc := range []struct {
		in   canon.TokenCount
		want string
	}{
		{canon.TokenCount{Count: 9, MaxModelLen: 32768, Estimate: true}, `{"count":9,"max_model_len":32768,"is_estimate":true}`},
		{canon.TokenCount{Count: 1}, `{"count":1,"max_model_len":null,"is_estimate":false}`},
	} {
		r := call(t, newPlugin(), abi.OpTokensEncode, 0, nil, tc.in.AppendJSON(nil), "route", RouteTokenize)
		if r.Status != abi.StatusOK || string(r.Payload) != tc.want {
			t.Errorf("%+v: %s %q %s", tc.in, r.Status, r.Payload, r.Error)
		}
	}
	var _ sdk.TokenCountTranslator = New()
}
