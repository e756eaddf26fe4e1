package ollamaapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// TestEncodeModels_Golden writes each model route's answer for the
// canonical lists in testdata and compares it with the golden files (the
// shapes of api.ListResponse, api.ProcessResponse, api.ShowResponse).
func TestEncodeModels_Golden(t *testing.T) {
	p := newPlugin()
	all, _ := os.ReadFile(filepath.Join("testdata", "models.canon.json"))
	one, _ := os.ReadFile(filepath.Join("testdata", "models_one.canon.json"))
	for _, tc := range []struct {
		name, route string
		list        []byte
		meta        []string
	}{
		{"tags", RouteTags, all, nil},
		{"ps", RoutePS, all, nil},
		{"version", RouteVersion, all, nil},
		{"show", RouteShow, one, []string{abi.MetaModel, "qwen3-8b"}},
		{"show_unknown_family", RouteShow, all, []string{abi.MetaModel, "nomic-embed-text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := append([]string{abi.MetaRoute, tc.route, abi.MetaKind, "models"}, tc.meta...)
			r := call(t, p, abi.OpModelsEncode, 0, nil, tc.list, meta...)
			if r.Status != abi.StatusOK {
				t.Fatalf("%s: %s", r.Status, r.Error)
			}
			goldenJSON(t, filepath.Join("models", tc.name+".json"), r.Payload)
		})
	}
	// A show call the host did not narrow to one model cannot be answered.
	r := call(t, p, abi.OpModelsEncode, 0, nil, all, abi.MetaRoute, RouteShow)
	if r.Status != abi.StatusBadInput {
		t.Fatalf("show without a model: %s %s", r.Status, r.Payload)
	}
}

// TestEncodeModels_Probes: GET / answers real Ollama's text, and both
// probes are declared public (answered without a key, naming nothing).
func TestEncodeModels_Probes(t *testing.T) {
	r := call(t, newPlugin(), abi.OpModelsEncode, 0, nil, []byte(`{"models":[]}`), abi.MetaRoute, RouteRoot, abi.MetaKind, "models")
	if r.Status != abi.StatusOK || string(r.Payload) != "Ollama is running" {
		t.Fatalf("%s %q", r.Status, r.Payload)
	}
	if ct := r.Meta[abi.MetaContentType]; !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content-type %q", ct)
	}
	public := map[string]bool{}
	for _, rt := range Manifest().Routes {
		public[rt.Path] = rt.Public
	}
	if !public["/"] || !public["/api/version"] || public["/api/tags"] || public["/api/ps"] {
		t.Fatalf("public routes %v", public)
	}
}

func TestEncodeError(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct {
		canon, stream, want string
	}{
		{`{"status":404,"type":"not_found","message":"model 'x' not found"}`, "", `{"error":"model 'x' not found"}`},
		{`{"status":400,"type":"invalid_request","message":"say \"hi\"\n"}`, "0", `{"error":"say \"hi\"\n"}`},
		{`{"status":503,"type":"overloaded"}`, "", `{"error":"the model is currently overloaded, please retry"}`},
		{`{"status":502,"type":"backend","message":"backend stream error: boom"}`, "1", `{"error":"backend stream error: boom"}` + "\n"},
		{`{"status":500,"type":"weird"}`, "", `{"error":"internal error"}`},
	} {
		meta := []string{abi.MetaRoute, RouteChat, abi.MetaKind, "chat"}
		if tc.stream != "" {
			meta = append(meta, abi.MetaStream, tc.stream)
		}
		r := call(t, p, abi.OpErrorEncode, 0, nil, []byte(tc.canon), meta...)
		if r.Status != abi.StatusOK || string(r.Payload) != tc.want {
			t.Errorf("%s: %s %q, want %q", tc.canon, r.Status, r.Payload, tc.want)
		}
	}
}
