package responses

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mindrouter/mindrouter/core/apierr"
)

// Begin never panics, and returns a body that is valid JSON or a client
// error, over a store holding a response and a conversation the inputs
// may name.
func FuzzBegin(f *testing.F) {
	e := newEnv(f)
	_, prev := e.answer(alice, `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,QUJD"}]}]}`, "seen")
	status, conv := e.serve(alice, "POST", "/v1/conversations", `{"items":[{"role":"user","content":"hi","id":"msg_c"}]}`)
	if status != 200 {
		f.Fatal(conv)
	}
	var c struct{ ID string }
	if err := json.Unmarshal([]byte(conv), &c); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","previous_response_id":"` + prev + `","input":"again"}`,
		`{"model":"m","conversation":"` + c.ID + `","input":[{"role":"user","content":"x"}]}`,
		`{"model":"m","conversation":{"id":"` + c.ID + `"},"input":[{"type":"function_call_output","call_id":"c","output":"\u0001"}]}`,
		`{"model":"m","previous_response_id":"` + prev + `","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:x"}]}]}`,
		`{"model":"m","previous_response_id":"` + prev + `","previous_response_id":"x","input":"\ud800"}`,
		`{"model":"m","store":false,"input":[]}`,
		`{"input":[{"role":"assistant","content":"a\"b\\c"}],"conversation":null}`,
		`[]`, `"x"`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, turn, err := e.k.Begin(context.Background(), alice, "chatcmpl-00000000000000000000000000000abc", body)
		if err != nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("Begin(%q): %v is not a client error", body, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Begin(%q) = %q: not JSON", body, out)
		}
		if turn != nil {
			turn.End(499) // stores nothing
		}
	})
}
