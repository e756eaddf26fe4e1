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
	}
	return sdk.BadInput("unknown probe " + strconv.Quote(probe) + " (the ollama adapter has models, loaded and health)")
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
