package openai

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestEncodeResponse_Golden encodes testdata/responses/*.canon.json with
// gateway meta and compares the bytes with *.json; each must decode with
// openai-go.
func TestEncodeResponse_Golden(t *testing.T) {
	p := newPlugin()
	for _, name := range testFiles(t, "responses", ".canon.json") {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "responses", name+".canon.json"))
			if err != nil {
				t.Fatal(err)
			}
			r := call(t, p, abi.OpResponseEncode, 0, nil, in, append([]string{"route", RouteChat}, gwMeta...)...)
			if r.Status != abi.StatusOK {
				t.Fatalf("%s: %s", r.Status, r.Error)
			}
			golden(t, filepath.Join("responses", name+".json"), r.Payload)
			var c oai.ChatCompletion
			if err := json.Unmarshal(r.Payload, &c); err != nil {
				t.Fatalf("openai-go: %v", err)
			}
			if c.ID != "chatcmpl-gw42" || c.Model != "client-model" || c.Created != 1710000000 || len(c.Choices) == 0 || c.Choices[0].FinishReason == "" {
				t.Errorf("openai-go view: %+v", c)
			}
		})
	}
}

func TestEncodeResponse_Typed(t *testing.T) {
	resp := &canon.ChatResponse{
		ID: "b", Model: "backend", Created: 9,
		Choices: []canon.Choice{{Message: canon.Message{Content: []canon.Part{{Type: canon.PartImage, URL: "http://x"}}}}},
	}
	var out sdk.Output
	if err := New().EncodeResponse(&sdk.Call{}, resp, &out); err != nil {
		t.Fatal(err)
	}
	want := `{"id":"b","object":"chat.completion","created":9,"model":"backend","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"stop"}],"system_fingerprint":null}`
	if string(out.Body) != want {
		t.Errorf("got  %s\nwant %s", out.Body, want)
	}
}

func TestEncodeResponse_BadMetaCreated(t *testing.T) {
	p := newPlugin()
	resp := canon.ChatResponse{Created: 77, Choices: []canon.Choice{{}}}
	for _, created := range []string{`1,"x":{`, "0123", "-5", "1e9", "99999999999999999999"} {
		r := call(t, p, abi.OpResponseEncode, 0, nil, resp.AppendJSON(nil), "created", created)
		if !strings.Contains(string(r.Payload), `"created":77,`) || !json.Valid(r.Payload) {
			t.Errorf("meta created %q must be ignored: %s", created, r.Payload)
		}
	}
}

func TestEncodeModels_Golden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "models.canon.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, newPlugin(), abi.OpModelsEncode, 0, nil, in, "route", RouteModels)
	if r.Status != abi.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Error)
	}
	golden(t, "models.json", r.Payload)
	var list struct {
		Object string      `json:"object"`
		Data   []oai.Model `json:"data"`
	}
	if err := json.Unmarshal(r.Payload, &list); err != nil || list.Object != "list" || len(list.Data) != 4 || list.Data[2].ID != "weird \"name\"\u2028" {
		t.Errorf("decoded %+v, %v", list, err)
	}
	// Capabilities are written only for a model discovery described.
	var caps struct {
		Data []struct {
			Capabilities *map[string]bool `json:"capabilities"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Payload, &caps); err != nil || caps.Data[0].Capabilities != nil ||
		caps.Data[3].Capabilities == nil || !(*caps.Data[3].Capabilities)["multimodal"] || (*caps.Data[3].Capabilities)["tools"] {
		t.Errorf("capabilities: %s %v", r.Payload, err)
	}
	var out sdk.Output
	if err := New().EncodeModels(&sdk.Call{}, &canon.ModelList{}, &out); err != nil || string(out.Body) != `{"object":"list","data":[]}` {
		t.Errorf("empty list: %s %v", out.Body, err)
	}
	out = sdk.Output{}
	one := canon.ModelList{Models: []canon.Model{{ID: "m", Created: 7, ContextLength: 4096, Backends: []string{"gpu-1", "a \"b\""}}}}
	want := `{"object":"list","data":[{"id":"m","object":"model","created":7,"owned_by":"mindrouter","context_length":4096,"max_model_len":4096,"backends":["gpu-1","a \"b\""]}]}`
	if err := New().EncodeModels(&sdk.Call{}, &one, &out); err != nil || string(out.Body) != want {
		t.Errorf("with backends:\n got %s\nwant %s (%v)", out.Body, want, err)
	}
}

func TestEncodeError(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct {
		in   canon.Error
		want string
	}{
		{canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "messages is required", Param: "messages"},
			`{"error":{"message":"messages is required","type":"invalid_request_error","param":"messages","code":null}}`},
		{canon.Error{Status: 401, Type: canon.ErrAuthentication, Message: "bad key"},
			`{"error":{"message":"bad key","type":"authentication_error","param":null,"code":"invalid_api_key"}}`},
		{canon.Error{Status: 403, Type: canon.ErrPermission, Message: "no access to model x"},
			`{"error":{"message":"no access to model x","type":"permission_error","param":null,"code":null}}`},
		{canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found", Message: "The model `x` does not exist"},
			`{"error":{"message":"The model ` + "`x`" + ` does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
		{canon.Error{Status: 413, Type: canon.ErrRequestTooLarge},
			`{"error":{"message":"request too large","type":"invalid_request_error","param":null,"code":"request_too_large"}}`},
		{canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Code: "context_length_exceeded", Message: "too long", Param: "messages"},
			`{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
		{canon.Error{Status: 429, Type: canon.ErrRateLimit, Message: "quota \"tokens\" exceeded"},
			`{"error":{"message":"quota \"tokens\" exceeded","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{canon.Error{Status: 502, Type: canon.ErrBackend, Message: "upstream reset"},
			`{"error":{"message":"upstream reset","type":"server_error","param":null,"code":null}}`},
		{canon.Error{Status: 503, Type: canon.ErrOverloaded},
			`{"error":{"message":"the model is currently overloaded, please retry","type":"server_error","param":null,"code":null}}`},
		{canon.Error{Status: 504, Type: canon.ErrTimeout},
			`{"error":{"message":"the request timed out","type":"server_error","param":null,"code":"timeout"}}`},
		{canon.Error{Status: 500, Type: canon.ErrInternal},
			`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`},
		{canon.Error{Status: 429, Type: "quota_future"},
			`{"error":{"message":"rate limit exceeded","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{canon.Error{Status: 418, Type: "teapot", Message: "m"},
			`{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`},
		{canon.Error{Type: "?"},
			`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`},
	} {
		r := call(t, p, abi.OpErrorEncode, 0, nil, tc.in.AppendJSON(nil), "route", RouteChat)
		if r.Status != abi.StatusOK || string(r.Payload) != tc.want {
			t.Errorf("%+v:\n got %s %s\nwant %s", tc.in, r.Status, r.Payload, tc.want)
		}
		if _, ok := r.Meta["status"]; ok {
			t.Errorf("%+v: status overridden", tc.in)
		}
		var e struct{ Error oai.Error }
		if err := json.Unmarshal(r.Payload, &e); err != nil || e.Error.Message == "" {
			t.Errorf("openai-go: %v %+v", err, e)
		}
	}
}
