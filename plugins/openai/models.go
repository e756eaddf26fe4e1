package openai

import (
	"strconv"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// defaultOwner is written as owned_by when the gateway knows no owner.
const defaultOwner = "mindrouter"

// EncodeModels writes {"object":"list","data":[{"id","object":"model",
// "created","owned_by"}]}. A known context window is added as
// "context_length" (OpenRouter, LM Studio) and "max_model_len" (vLLM), and
// the backends serving the model as "backends" and, when discovery reported
// any, what the model can do as "capabilities" {multimodal, embeddings,
// structured_output, thinking, tools} (the reference implementation's
// extra fields). Capabilities are left out rather than written as false
// when no backend said: unknown is not "cannot".
func (t *Translator) EncodeModels(c *sdk.Call, list *canon.ModelList, out *sdk.Output) error {
	b := append(out.Body, `{"object":"list","data":[`...)
	for i := range list.Models {
		m := &list.Models[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonw.String(b, m.ID)
		b = append(b, `,"object":"model","created":`...)
		b = jsonw.Int(b, m.Created)
		b = append(b, `,"owned_by":`...)
		owner := m.OwnedBy
		if owner == "" {
			owner = defaultOwner
		}
		b = jsonw.String(b, owner)
		if m.ContextLength > 0 {
			b = append(b, `,"context_length":`...)
			b = jsonw.Int(b, int64(m.ContextLength))
			b = append(b, `,"max_model_len":`...)
			b = jsonw.Int(b, int64(m.ContextLength))
		}
		if len(m.Backends) > 0 {
			b = append(b, `,"backends":[`...)
			for j, name := range m.Backends {
				if j > 0 {
					b = append(b, ',')
				}
				b = jsonw.String(b, name)
			}
			b = append(b, ']')
		}
		if len(m.Capabilities) > 0 {
			b = appendCapabilities(b, m.Capabilities)
		}
		b = append(b, '}')
	}
	out.Body = append(b, "]}"...)
	return nil
}

// capabilityFields maps canonical capability names to the fields of the
// "capabilities" object, in the order they are written.
var capabilityFields = [...]struct{ field, cap string }{
	{"multimodal", canon.CapVision},
	{"embeddings", canon.CapEmbedding},
	{"structured_output", canon.CapStructured},
	{"thinking", canon.CapThinking},
	{"tools", canon.CapTools},
}

func appendCapabilities(b []byte, caps []string) []byte {
	b = append(b, `,"capabilities":{`...)
	for i, f := range capabilityFields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.field...)
		b = append(b, `":`...)
		has := false
		for _, c := range caps {
			if c == f.cap {
				has = true
				break
			}
		}
		b = strconv.AppendBool(b, has)
	}
	return append(b, '}')
}
