package ollamaapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// TestEncodeResponse_Golden encodes each testdata/responses/*.canon.json
// for /api/chat and /api/generate and compares the bytes with *.chat.json
// and *.generate.json (the shapes of api.ChatResponse and
// api.GenerateResponse).
func TestEncodeResponse_Golden(t *testing.T) {
	p := newPlugin()
	for _, name := range testFiles(t, "responses", ".canon.json") {
		body, err := os.ReadFile(filepath.Join("testdata", "responses", name+".canon.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, route := range []string{RouteChat, RouteGenerate} {
			t.Run(name+"/"+route, func(t *testing.T) {
				r := call(t, p, abi.OpResponseEncode, 0, nil, body, routeMeta(route)...)
				if r.Status != abi.StatusOK {
					t.Fatalf("status %s: %s", r.Status, r.Error)
				}
				if !json.Valid(r.Payload) {
					t.Fatalf("not JSON: %s", r.Payload)
				}
				golden(t, filepath.Join("responses", name+"."+route+".json"), append(r.Payload, '\n'))
			})
		}
	}
}

// TestEncodeResponse_BackendValues: without the gateway's meta, the
// backend's model and creation time are used.
func TestEncodeResponse_BackendValues(t *testing.T) {
	body, _ := os.ReadFile(filepath.Join("testdata", "responses", "text.canon.json"))
	r := call(t, newPlugin(), abi.OpResponseEncode, 0, nil, body, abi.MetaRoute, RouteChat)
	var got struct {
		Model     string `json:"model"`
		CreatedAt string `json:"created_at"`
	}
	if err := json.Unmarshal(r.Payload, &got); err != nil || got.Model != "backend-name" || got.CreatedAt != "2023-11-14T22:13:20Z" {
		t.Fatalf("%s: %+v %v", r.Payload, got, err)
	}
}
