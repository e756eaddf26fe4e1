package telemetry

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
)

// memStore records what it is given.
type memStore struct {
	mu       sync.Mutex
	backends []BackendSample
	pruned   []time.Time
	wrote    chan struct{}
}

func (m *memStore) Write(_ context.Context, _ []GPUSample, b []BackendSample) error {
	m.mu.Lock()
	m.backends = append(m.backends, b...)
	m.mu.Unlock()
	m.wrote <- struct{}{}
	return nil
}
func (m *memStore) GPUs(context.Context, Query) ([]GPUPoint, error)         { return nil, nil }
func (m *memStore) Backends(context.Context, Query) ([]BackendPoint, error) { return nil, nil }
func (m *memStore) Prune(_ context.Context, t time.Time) error {
	m.mu.Lock()
	m.pruned = append(m.pruned, t)
	m.mu.Unlock()
	return nil
}

// A sample holds every backend's state; a second sample within a second
// (a probe's hook, not a round) is not taken.
func TestRecorderSamples(t *testing.T) {
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "b1", Engine: "vllm", URL: "http://127.0.0.1:1", MaxConcurrent: 3}}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st := &memStore{wrote: make(chan struct{}, 10)}
	r := NewRecorder(RecorderOptions{Registry: reg, Store: st, Replica: "gw-a", Now: clock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	r.Sample()
	<-st.wrote
	r.Sample() // the same instant: skipped
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	r.Sample()
	<-st.wrote
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.backends) != 2 {
		t.Fatalf("%d backend samples, want 2: %+v", len(st.backends), st.backends)
	}
	b := st.backends[1]
	if b.Backend != "b1" || b.Replica != "gw-a" || b.MaxConcurrent != 3 || b.State != "enabled" || b.Breaker != "closed" ||
		b.Healthy || !b.At.Equal(now) {
		t.Errorf("sample: %+v", b)
	}
}
