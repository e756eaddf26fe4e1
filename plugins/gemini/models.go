package gemini

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeModels writes models.list ({"models":[Model...]}) or, on the
// one-model route, models.get (one Model).
func (t *Translator) EncodeModels(c *sdk.Call, list *canon.ModelList, out *sdk.Output) error {
	var w jsonw.W
	w.B = out.Body[:0]
	if c.Meta(abi.MetaRoute) == routeGet {
		if len(list.Models) > 0 {
			model(&w, &list.Models[0])
		}
		out.Body = w.B
		return nil
	}
	w.Obj()
	w.Key("models")
	w.Arr()
	for i := range list.Models {
		model(&w, &list.Models[i])
	}
	w.EndArr()
	w.EndObj()
	out.Body = w.B
	return nil
}

// model writes one Model. Gemini's token limits, when discovery knows the
// context window, are both that window; the methods follow the
// capabilities.
func model(w *jsonw.W, m *canon.Model) {
	w.Obj()
	w.Key("name")
	w.Str("models/" + m.ID)
	w.Key("baseModelId")
	w.Str(m.ID)
	w.Key("version")
	w.Str("001")
	w.Key("displayName")
	w.Str(m.ID)
	if m.ContextLength > 0 {
		w.Key("inputTokenLimit")
		w.Int(int64(m.ContextLength))
		w.Key("outputTokenLimit")
		w.Int(int64(m.ContextLength))
	}
	w.Key("supportedGenerationMethods")
	w.Arr()
	embed, chat := false, len(m.Capabilities) == 0
	for _, c := range m.Capabilities {
		embed = embed || c == canon.CapEmbedding
		chat = chat || c == canon.CapCompletion
	}
	if chat {
		w.Str("generateContent")
		w.Str("streamGenerateContent")
	}
	w.Str("countTokens")
	if embed {
		w.Str("embedContent")
		w.Str("batchEmbedContents")
	}
	w.EndArr()
	for _, c := range m.Capabilities {
		if c == canon.CapThinking {
			w.Key("thinking")
			w.Bool(true)
		}
	}
	w.EndObj()
}

// EncodeTokenCount writes countTokens' answer.
func (t *Translator) EncodeTokenCount(c *sdk.Call, tc *canon.TokenCount, out *sdk.Output) error {
	var w jsonw.W
	w.B = out.Body[:0]
	w.Obj()
	w.Key("totalTokens")
	w.Int(int64(tc.Count))
	w.EndObj()
	out.Body = w.B
	return nil
}
