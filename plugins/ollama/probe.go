package ollama

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"strconv"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// Probe names of the manifest.
const (
	probeModels = "models" // GET /api/tags: installed models
	probeLoaded = "loaded" // GET /api/ps: models in memory now
	probeHealth = "health" // GET /api/version
	probeShow   = "show"   // POST /api/show, per model (meta "model")
)

// DecodeProbe parses a probe response; meta "status" is its HTTP status.
// As in the vllm adapter, a non-2xx status reports Healthy=false whatever
// the probe, and an absent status is taken as success except by the health
// probe, which exists to report exactly that.
func (a *Adapter) DecodeProbe(c *sdk.Call, probe string, body []byte, d *canon.Discovery) error {
	status := c.Meta(abi.MetaStatus)
	ok := status == ""
	if !ok {
		n, err := strconv.Atoi(status)
		if err != nil {
			return sdk.BadInput("probe status " + strconv.Quote(status) + " is not a number")
		}
		ok = n >= 200 && n < 300
	}
	switch probe {
	case probeHealth:
		h := status != "" && ok
		d.Healthy = &h
		if h {
			if v, err := a.p.ParseBytes(body); err == nil {
				d.Version = string(v.GetStringBytes("version"))
			}
		}
		return nil
	case probeModels, probeLoaded:
		if !ok {
			d.Healthy = new(bool)
			return nil
		}
		return a.decodeModels(probe == probeLoaded, body, d)
	case probeShow:
		if !ok {
			d.Healthy = new(bool) // the model went away, say: nothing learned
			return nil
		}
		return a.decodeShow(c.Meta(abi.MetaModel), body, d)
	}
	return sdk.BadInput("unknown probe " + strconv.Quote(probe) + " (the ollama adapter has models, loaded, health and show)")
}

// decodeShow reads /api/show's capabilities, family and context window
// for model. The window is model_info.<arch>.context_length, the context
// the model was trained for: the gateway bounds it by the backend's
// max_num_ctx and sends the result as every request's num_ctx (request.go),
// so Ollama loads the model with that window, not its default 4096, and
// the gateway's context check uses the same figure. It takes precedence
// over /api/ps's context_length, which is only the current load's.
func (a *Adapter) decodeShow(model string, body []byte, d *canon.Discovery) error {
	v, err := a.parseObject(body, "show probe")
	if err != nil {
		return err
	}
	dm := canon.DiscoveredModel{Name: model, Family: string(v.GetStringBytes("details", "family"))}
	if list := v.Get("capabilities"); list != nil && list.Type() == fastjson.TypeArray {
		dm.Capabilities = []string{} // known, even if empty
		for _, cv := range list.GetArray() {
			if c := canonCap(cv.GetStringBytes()); c != "" {
				dm.Capabilities = append(dm.Capabilities, c)
			}
		}
	}
	if mi := v.Get("model_info"); mi != nil {
		if arch := mi.GetStringBytes("general.architecture"); len(arch) > 0 {
			if n := mi.GetInt(string(arch) + ".context_length"); n > 0 {
				dm.ContextLength = n
			}
		}
	}
	d.Models = []canon.DiscoveredModel{dm}
	return nil
}

// canonCap maps Ollama's capability word to the canonical name ("" for
// one the gateway does not use, such as "insert").
func canonCap(b []byte) string {
	switch string(b) {
	case "completion":
		return canon.CapCompletion
	case "vision":
		return canon.CapVision
	case "tools":
		return canon.CapTools
	case "thinking":
		return canon.CapThinking
	case "embedding":
		return canon.CapEmbedding
	}
	return ""
}

// decodeModels reads the "models" list of /api/tags (ListResponse) or
// /api/ps (ProcessResponse). For loaded models the size is the part in GPU
// memory (size_vram).
func (a *Adapter) decodeModels(loaded bool, body []byte, d *canon.Discovery) error {
	v, err := a.parseObject(body, "probe")
	if err != nil {
		return err
	}
	list := v.Get("models")
	if list == nil || list.Type() == fastjson.TypeNull {
		return nil
	}
	arr, err := list.Array()
	if err != nil {
		return sdk.BadInput("ollama probe: models is not an array")
	}
	d.Models = make([]canon.DiscoveredModel, 0, len(arr))
	for _, m := range arr {
		name := m.GetStringBytes("name")
		if len(name) == 0 {
			name = m.GetStringBytes("model")
		}
		if len(name) == 0 {
			continue
		}
		dm := canon.DiscoveredModel{
			Name:   string(name),
			Family: string(m.GetStringBytes("details", "family")),
			Loaded: loaded,
		}
		if loaded {
			dm.SizeBytes = m.GetInt64("size_vram")
			dm.ContextLength = m.GetInt("context_length")
		} else {
			dm.SizeBytes = m.GetInt64("size")
		}
		if dm.SizeBytes < 0 {
			dm.SizeBytes = 0
		}
		if dm.ContextLength < 0 {
			dm.ContextLength = 0
		}
		for _, cv := range m.GetArray("capabilities") {
			if s := cv.GetStringBytes(); len(s) > 0 {
				dm.Capabilities = append(dm.Capabilities, string(s))
			}
		}
		d.Models = append(d.Models, dm)
	}
	return nil
}
