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

// labeled holds a family's series by label value. Once warm a lookup is
// a read-locked map read, so observing does not allocate. At most
// maxLabels values are kept: past that, new ones share "other", so a
// client sending made-up names cannot grow /metrics. A value is copied
// when first seen, since it may alias a pooled request buffer.
type labeled[T any] struct {
	mu sync.RWMutex
	m  map[string]*T
	mk func() *T
}

func newLabeled[T any](mk func() *T) *labeled[T] {
	return &labeled[T]{m: map[string]*T{}, mk: mk}
}

func (l *labeled[T]) get(label string) *T {
	l.mu.RLock()
	v := l.m[label]
	l.mu.RUnlock()
	if v != nil {
		return v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v = l.m[label]; v != nil {
		return v
	}
	if len(l.m) >= maxLabels {
		label = "other"
		if v = l.m[label]; v != nil {
			return v
		}
	}
	v = l.mk()
	l.m[strings.Clone(label)] = v
	return v
}

// each calls f for every series, by label value, under the read lock.
func (l *labeled[T]) each(f func(label string, v *T)) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	keys := make([]string, 0, len(l.m))
	for k := range l.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f(k, l.m[k])
	}
}

// histVec is a histogram family with one label.
type histVec struct{ *labeled[histogram] }

func newHistVec(bounds []float64) histVec {
	return histVec{newLabeled(func() *histogram { return newHistogram(bounds) })}
}

// write writes the family, its series sorted by label value.
func (v histVec) write(w io.Writer, name, labelName, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	v.each(func(label string, h *histogram) {
		h.write(w, name, fmt.Sprintf("%s=%q", labelName, label))
	})
}
