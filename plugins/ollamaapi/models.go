package ollamaapi

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Version is what GET /api/version reports: the Ollama release whose API
// this translator follows and whose official Go client (api package) its
// tests run. Clients compare it to gate features (thinking, tool names,
// structured outputs came in 0.5–0.9), so a real Ollama version that has
// them all is the honest answer; the gateway's own version is not an
// Ollama version.
const Version = "0.17.4"

// EncodeModels answers the model routes (meta route): /api/tags (every
// model), /api/ps (the loaded ones), /api/show (the one model of meta
// model, which the host puts alone in the list) and /api/version.
func (t *Translator) EncodeModels(c *sdk.Call, list *canon.ModelList, out *sdk.Output) error {
	route, _ := c.MetaBytes(abi.MetaRoute)
	switch string(route) {
	case RouteVersion:
		out.Body = append(out.Body, `{"version":"`+Version+`"}`...)
	case RouteRoot:
		// Real Ollama's answer, which probes (Open WebUI, ollama-python's
		// docs, load balancers) compare byte for byte.
		out.SetMeta(abi.MetaContentType, "text/plain; charset=utf-8")
		out.Body = append(out.Body, "Ollama is running"...)
	case RoutePS:
		out.Body = appendPS(out.Body, list)
	case RouteShow:
		m := showModel(c, list)
		if m == nil {
			return sdk.BadInput("ollama-api: /api/show needs the host to name one model (ABI 2.2)")
		}
		out.Body = appendShow(out.Body, m)
	case RouteTags, "":
		out.Body = appendTags(out.Body, list)
	default:
		return sdk.BadInput("route " + string(route) + " has no model list")
	}
	return nil
}

// appendTags writes {"models":[{"name","model","modified_at","size",
// "digest","details"}]}.
func appendTags(b []byte, list *canon.ModelList) []byte {
	b = append(b, `{"models":[`...)
	for i := range list.Models {
		m := &list.Models[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEntry(b, m)
		b = append(b, `,"modified_at":`...)
		b = appendTime(b, m.Created)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendPS writes {"models":[{"name","model","size","digest","details",
// "expires_at","size_vram","context_length"}]} for the loaded models. The
// gateway does not manage keep-alive, so expires_at is the zero time
// (which ollama ps shows as "Never"), and size_vram is the discovered size.
func appendPS(b []byte, list *canon.ModelList) []byte {
	b = append(b, `{"models":[`...)
	n := 0
	for i := range list.Models {
		m := &list.Models[i]
		if !m.Loaded {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendEntry(b, m)
		b = append(b, `,"expires_at":"0001-01-01T00:00:00Z","size_vram":`...)
		b = jsonw.Int(b, m.SizeBytes)
		b = append(b, `,"context_length":`...)
		b = jsonw.Int(b, int64(m.ContextLength))
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendEntry opens a model entry: {"name","model","size","digest","details"
// (left open).
func appendEntry(b []byte, m *canon.Model) []byte {
	b = jsonw.String(append(b, `{"name":`...), m.ID)
	b = jsonw.String(append(b, `,"model":`...), m.ID)
	b = jsonw.Int(append(b, `,"size":`...), max(m.SizeBytes, 0))
	b = append(b, `,"digest":`...)
	b = appendDigest(b, m.ID)
	return appendDetails(append(b, `,"details":`...), m)
}

// appendDigest writes a stable 64-hex-digit digest for a model name. The
// gateway has no blob digests; clients use the digest as an id and some
// (ollama list) print its first 12 characters, so an empty one would not do.
// It is the SHA-256 of the name, not of any model file.
func appendDigest(b []byte, name string) []byte {
	sum := sha256.Sum256([]byte(name))
	b = append(b, '"')
	b = hex.AppendEncode(b, sum[:])
	return append(b, '"')
}

// appendDetails writes Ollama's details object. Only the family is known
// (from discovery); the format, parameter size and quantization are not,
// and are left empty.
func appendDetails(b []byte, m *canon.Model) []byte {
	b = append(b, `{"parent_model":"","format":"","family":`...)
	b = jsonw.String(b, m.Family)
	b = append(b, `,"families":`...)
	if m.Family != "" {
		b = append(jsonw.String(append(b, '['), m.Family), ']')
	} else {
		b = append(b, "null"...)
	}
	return append(b, `,"parameter_size":"","quantization_level":""}`...)
}

// showModel returns the model /api/show is about: meta model's entry, or
// the list's only model.
func showModel(c *sdk.Call, list *canon.ModelList) *canon.Model {
	name, ok := c.MetaBytes(abi.MetaModel)
	for i := range list.Models {
		if ok && list.Models[i].ID == string(name) {
			return &list.Models[i]
		}
	}
	if len(list.Models) == 1 {
		return &list.Models[0]
	}
	return nil
}

// appendShow writes /api/show's answer. There is no Modelfile, template or
// parameter text to show (the backends own them): those are empty.
// model_info carries what discovery knows, under GGUF's key names
// (general.architecture, <architecture>.context_length; general.* when the
// family is unknown).
func appendShow(b []byte, m *canon.Model) []byte {
	b = append(b, `{"modelfile":"","parameters":"","template":"","details":`...)
	b = appendDetails(b, m)
	b = append(b, `,"model_info":{`...)
	arch := "general"
	if m.Family != "" {
		arch = m.Family
		b = jsonw.String(append(b, `"general.architecture":`...), m.Family)
	}
	if m.ContextLength > 0 {
		if m.Family != "" {
			b = append(b, ',')
		}
		b = jsonw.String(b, arch+".context_length")
		b = jsonw.Int(append(b, ':'), int64(m.ContextLength))
	}
	b = append(b, `},"capabilities":[`...)
	b = appendCapabilities(b, m.Capabilities)
	b = append(b, `],"modified_at":`...)
	b = appendTime(b, m.Created)
	return append(b, '}')
}

// appendCapabilities writes Ollama's capability words for the canonical
// ones (the same words; structured output, which every Ollama model has,
// has none). A model with none known is a completion model: the gateway
// lists models it routes chat to.
func appendCapabilities(b []byte, caps []string) []byte {
	n := 0
	for _, c := range caps {
		switch c {
		case canon.CapCompletion, canon.CapVision, canon.CapTools, canon.CapThinking, canon.CapEmbedding:
		default:
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = jsonw.String(b, c)
	}
	if n == 0 {
		b = append(b, `"completion"`...)
	}
	return b
}
