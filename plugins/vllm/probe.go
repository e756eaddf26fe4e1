package vllm

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"bytes"
	"math"
	"strconv"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// Probe names (see Manifest).
const (
	probeModels  = "models"
	probeHealth  = "health"
	probeMetrics = "metrics"
)

// DecodeProbe parses the /v1/models, /health and /metrics probes.
//
// A non-2xx status marks the backend unhealthy whatever the probe; an absent
// status (a caller that does not say) is taken as success except by the
// health probe, which exists to report exactly that.
func (a *Adapter) DecodeProbe(c *sdk.Call, probe string, body []byte, d *canon.Discovery) error {
	status := c.Meta(abi.MetaStatus)
	ok := status == "" || is2xx(status)
	switch probe {
	case probeHealth:
		h := status != "" && ok
		d.Healthy = &h
		return nil
	case probeModels:
		if !ok {
			d.Healthy = new(bool)
			return nil
		}
		return a.decodeModels(body, d)
	case probeMetrics:
		if !ok {
			d.Healthy = new(bool)
			return nil
		}
		decodeMetrics(body, d)
		return nil
	}
	return sdk.BadInput("unknown probe " + strconv.Quote(probe) + " (the vllm adapter has models, health and metrics)")
}

func is2xx(status string) bool {
	n, err := strconv.Atoi(status)
	return err == nil && n >= 200 && n < 300
}

// decodeModels reads {"object":"list","data":[{"id","max_model_len",...}]}.
// Every model vLLM lists is servable now (LoRA adapters appear as entries
// with a parent), so all are Loaded.
func (a *Adapter) decodeModels(body []byte, d *canon.Discovery) error {
	v, err := a.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("models probe: invalid JSON: " + err.Error())
	}
	data := v.Get("data")
	if data == nil || data.Type() != fastjson.TypeArray {
		return sdk.BadInput("models probe: data: missing or not an array")
	}
	arr, _ := data.Array()
	if len(arr) > 0 {
		d.Models = make([]canon.DiscoveredModel, 0, len(arr))
	}
	for _, m := range arr {
		id := str(m.Get("id"))
		if id == "" {
			continue
		}
		d.Models = append(d.Models, canon.DiscoveredModel{
			Name:          id,
			Loaded:        true,
			ContextLength: count(m.Get("max_model_len")),
		})
	}
	return nil
}

// The vLLM gauges the metrics probe reads. vLLM's V1 engine renamed
// gpu_cache_usage_perc to kv_cache_usage_perc (0.10); both are read and the
// newer wins.
var (
	metricRunning = []byte("vllm:num_requests_running")
	metricWaiting = []byte("vllm:num_requests_waiting")
	metricKV      = []byte("vllm:kv_cache_usage_perc")
	metricKVOld   = []byte("vllm:gpu_cache_usage_perc")
)

// decodeMetrics scans Prometheus text exposition. Request counts are summed
// across label sets (data-parallel engines, several served names); KV-cache
// usage, a fraction per engine, is averaged. Malformed lines, NaN and
// infinities are skipped. HasLoad is set only when one of the gauges was
// found, so a body that is not vLLM's never reads as an idle backend.
func decodeMetrics(body []byte, d *canon.Discovery) {
	var run, wait, kv, kvOld float64
	var nRun, nWait, nKV, nKVOld int
	for len(body) > 0 {
		var line []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			line, body = body, nil
		}
		line = bytes.TrimLeft(line, " \t")
		if len(line) < 5 || line[0] == '#' || !bytes.HasPrefix(line, []byte("vllm:")) {
			continue
		}
		end := bytes.IndexAny(line, "{ \t")
		if end < 0 {
			continue
		}
		name, rest := line[:end], line[end:]
		var sum *float64
		var n *int
		switch {
		case bytes.Equal(name, metricRunning):
			sum, n = &run, &nRun
		case bytes.Equal(name, metricWaiting):
			sum, n = &wait, &nWait
		case bytes.Equal(name, metricKV):
			sum, n = &kv, &nKV
		case bytes.Equal(name, metricKVOld):
			sum, n = &kvOld, &nKVOld
		default:
			continue
		}
		if rest[0] == '{' {
			j := skipLabels(rest)
			if j < 0 {
				continue
			}
			rest = rest[j:]
		}
		val, ok := sampleValue(rest)
		if !ok {
			continue
		}
		*sum += val
		*n++
	}
	if nRun+nWait+nKV+nKVOld == 0 {
		return
	}
	d.HasLoad = true
	d.Running = clampCount(run)
	d.Waiting = clampCount(wait)
	switch {
	case nKV > 0:
		d.KVCacheUsage = clamp01(kv / float64(nKV))
	case nKVOld > 0:
		d.KVCacheUsage = clamp01(kvOld / float64(nKVOld))
	}
}

// skipLabels returns the index just past the label set that opens s (at
// '{'), honouring quoted values with backslash escapes; -1 if unterminated.
func skipLabels(s []byte) int {
	inQuote := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return i + 1
		}
	}
	return -1
}

// sampleValue parses the value after a metric name and labels: whitespace,
// the number, then an optional timestamp.
func sampleValue(s []byte) (float64, bool) {
	s = bytes.TrimLeft(s, " \t")
	end := bytes.IndexAny(s, " \t\r")
	if end >= 0 {
		s = s[:end]
	}
	if len(s) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func clamp01(f float64) float64 {
	if math.IsNaN(f) || f < 0 {
		return 0
	}
	return math.Min(f, 1)
}

// clampCount keeps a summed request count finite and non-negative (a sum of
// hostile values may overflow to infinity or NaN).
func clampCount(f float64) float64 {
	const most = 1e12
	switch {
	case math.IsNaN(f) || f < 0:
		return 0
	case f > most:
		return most
	}
	return f
}
