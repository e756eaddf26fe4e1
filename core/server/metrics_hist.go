package server

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxLabels bounds a family's label values: past it new values fold into
// "other", so a client sending made-up model names cannot grow /metrics.
const maxLabels = 256

// histogram is a Prometheus histogram with fixed bounds (seconds):
// observing is one bucket search and two atomic adds.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // len(bounds)+1, the last one +Inf
	sumNs  atomic.Uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	sec := d.Seconds()
	i := 0
	for i < len(h.bounds) && sec > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// write writes h's series; label is `name="value"`.
func (h *histogram) write(w io.Writer, name, label string) {
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{%s,le=\"%g\"} %d\n", name, label, b, cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, label, cum)
	fmt.Fprintf(w, "%s_sum{%s} %g\n", name, label, float64(h.sumNs.Load())/1e9)
	fmt.Fprintf(w, "%s_count{%s} %d\n", name, label, cum)
}

// histVec is a histogram family with one label. Lookups are read-locked
// map reads (keys stop changing after warm-up), so observing does not
// allocate.
type histVec struct {
	bounds []float64
	mu     sync.RWMutex
	m      map[string]*histogram
}

func newHistVec(bounds []float64) *histVec {
	return &histVec{bounds: bounds, m: map[string]*histogram{}}
}

func (v *histVec) get(label string) *histogram {
	v.mu.RLock()
	h := v.m[label]
	v.mu.RUnlock()
	if h != nil {
		return h
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if h = v.m[label]; h != nil {
		return h
	}
	if len(v.m) >= maxLabels {
		label = "other"
		if h = v.m[label]; h != nil {
			return h
		}
	}
	// The label may alias a pooled request buffer: keep a copy.
	h = newHistogram(v.bounds)
	v.m[strings.Clone(label)] = h
	return h
}

// write writes the family, its series sorted by label value.
func (v *histVec) write(w io.Writer, name, labelName, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	v.mu.RLock()
	defer v.mu.RUnlock()
	keys := make([]string, 0, len(v.m))
	for k := range v.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.m[k].write(w, name, fmt.Sprintf("%s=%q", labelName, k))
	}
}
