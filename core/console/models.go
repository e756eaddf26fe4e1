package console

import (
	"net/http"
	"strings"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

type modelsView struct {
	Models   []canon.Model
	Base     string // the API's base URL, no trailing slash
	Example  string // the model the snippets name
	Snippets []snippet
}

type snippet struct {
	ID, Name, Code string
}

// models lists the models the user may call now (the allowlist applied,
// as /v1/models applies it) with connection snippets.
func (c *Console) models(w http.ResponseWriter, r *http.Request, rq *Request) {
	var v modelsView
	if c.o.Models != nil {
		for _, m := range c.o.Models.Models().Models {
			if rq.Principal.Models.Allows(m.ID) {
				v.Models = append(v.Models, m)
			}
		}
	}
	v.Base = c.apiBase(r)
	v.Example = "MODEL"
	if len(v.Models) > 0 {
		v.Example = v.Models[0].ID
	}
	v.Snippets = snippets(v.Base, v.Example)
	c.render(w, r, rq, http.StatusOK, "models.html", "Models", v)
}

// apiBase is the URL clients call: console.BaseURL, else this request's
// own scheme and host (the console shares the API's listener).
func (c *Console) apiBase(r *http.Request) string {
	if c.o.BaseURL != "" {
		return strings.TrimSuffix(c.o.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil || c.o.TLS {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// snippets are copy-paste connection examples; $MINDROUTER_API_KEY stands
// for a key from the keys page.
func snippets(base, model string) []snippet {
	r := strings.NewReplacer("{BASE}", base, "{MODEL}", model)
	return []snippet{
		{"curl", "curl", r.Replace(`curl {BASE}/v1/chat/completions \
  -H "Authorization: Bearer $MINDROUTER_API_KEY" \
  -H 'Content-Type: application/json' \
  -d '{"model": "{MODEL}", "messages": [{"role": "user", "content": "Hello"}]}'`)},
		{"openai", "OpenAI (Python)", r.Replace(`import os
from openai import OpenAI

client = OpenAI(base_url="{BASE}/v1", api_key=os.environ["MINDROUTER_API_KEY"])
reply = client.chat.completions.create(
    model="{MODEL}",
    messages=[{"role": "user", "content": "Hello"}],
)
print(reply.choices[0].message.content)`)},
		{"anthropic", "Anthropic (Python)", r.Replace(`import os
import anthropic

client = anthropic.Anthropic(base_url="{BASE}/anthropic", api_key=os.environ["MINDROUTER_API_KEY"])
msg = client.messages.create(
    model="{MODEL}", max_tokens=1024,
    messages=[{"role": "user", "content": "Hello"}],
)
print(msg.content[0].text)`)},
		{"ollama", "Ollama (Python)", r.Replace(`import os
from ollama import Client

client = Client(host="{BASE}", headers={"Authorization": "Bearer " + os.environ["MINDROUTER_API_KEY"]})
reply = client.chat(model="{MODEL}", messages=[{"role": "user", "content": "Hello"}])
print(reply.message.content)`)},
		{"claude-code", "Claude Code", r.Replace(`export ANTHROPIC_BASE_URL={BASE}/anthropic
export ANTHROPIC_AUTH_TOKEN=$MINDROUTER_API_KEY
export ANTHROPIC_MODEL={MODEL}
export ANTHROPIC_SMALL_FAST_MODEL={MODEL}
claude`)},
		{"codex", "Codex", r.Replace(`# ~/.codex/config.toml
model = "{MODEL}"
model_provider = "mindrouter"

[model_providers.mindrouter]
name = "MindRouter"
base_url = "{BASE}/v1"
env_key = "MINDROUTER_API_KEY"
wire_api = "responses"`)},
	}
}
