package score

import (
	"errors"
	"fmt"
	"math"
)

// Weights weigh the soft score's parts (see the package doc). Zero turns a
// part off; weights are relative, so only their ratios matter.
type Weights struct {
	Loaded     float64 `yaml:"loaded"`      // the model is already in GPU memory
	GPUUtil    float64 `yaml:"gpu_util"`    // idle GPUs (sidecar)
	QueueDepth float64 `yaml:"queue_depth"` // free slots, few waiting
	Latency    float64 `yaml:"latency"`     // low latency EMA
	Throughput float64 `yaml:"throughput"`  // high tokens/s EMA
	Priority   float64 `yaml:"priority"`    // admin priority
	KVCache    float64 `yaml:"kv_cache"`    // free KV cache (vLLM)
	Waiting    float64 `yaml:"waiting"`     // few requests waiting in the engine (vLLM)
}

// DefaultWeights favour a backend that has the model loaded (loading one
// takes seconds to minutes), then spare slots, then the GPU and speed
// figures; they sum to 100. With them a loaded backend that is full still
// outranks an idle one that would have to load the model, unless the
// loaded one is far slower or has a long queue.
func DefaultWeights() Weights {
	return Weights{
		Loaded:     30,
		GPUUtil:    10,
		QueueDepth: 20,
		Latency:    10,
		Throughput: 10,
		Priority:   10,
		KVCache:    5,
		Waiting:    5,
	}
}

// Validate reports every weight that is negative, NaN or infinite.
func (w Weights) Validate() error {
	var errs []error
	for i, v := range w.array() {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("score weight %s: %v is not a finite number ≥ 0", partNames[i], v))
		}
	}
	return errors.Join(errs...)
}

// array lists the weights in part order (the part* constants).
func (w Weights) array() [nParts]float64 {
	return [nParts]float64{w.Loaded, w.GPUUtil, w.QueueDepth, w.Latency, w.Throughput, w.Priority, w.KVCache, w.Waiting}
}

// The soft score's parts, in Weights' order.
const (
	partLoaded = iota
	partGPU
	partQueue
	partLatency
	partThroughput
	partPriority
	partKV
	partWaiting
	nParts
)

// partNames are the parts' keys in sched.Candidate.Parts (and the
// weights' YAML keys).
var partNames = [nParts]string{"loaded", "gpu_util", "queue_depth", "latency", "throughput", "priority", "kv_cache", "waiting"}
