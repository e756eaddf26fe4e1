package score

import (
	"testing"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestScorer_Unmet(t *testing.T) {
	caps := func(c ...string) canon.DiscoveredModel { return canon.DiscoveredModel{Name: "m", Capabilities: c} }
	text := caps(canon.CapCompletion, canon.CapTools)
	vision := caps(canon.CapCompletion, canon.CapVision)
	for _, tc := range []struct {
		name  string
		setup func(all []*backend.Backend)
		needs Needs
		model string
		want  string
	}{
		{"one lacks vision, one has it", func(all []*backend.Backend) { setModel(all[0], text); setModel(all[1], vision) },
			Needs{Generate: true, Vision: true}, "m", ""},
		{"both lack vision", func(all []*backend.Backend) { setModel(all[0], text); setModel(all[1], text) },
			Needs{Generate: true, Vision: true}, "m", "image input"},
		{"each lacks another", func(all []*backend.Backend) { setModel(all[0], text); setModel(all[1], vision) },
			Needs{Generate: true, Vision: true, Tools: true}, "m", "image input and tools"},
		{"tools", func(all []*backend.Backend) { setModel(all[0], vision); setModel(all[1], vision) },
			Needs{Tools: true}, "m", "tools"},
		{"structured", func(all []*backend.Backend) {
			setModel(all[0], caps(canon.CapEmbedding))
			setModel(all[1], caps(canon.CapEmbedding))
		}, Needs{Structured: true}, "m", "structured output"},
		{"chat on an embedding model", func(all []*backend.Backend) {
			setModel(all[0], caps(canon.CapEmbedding))
			setModel(all[1], caps(canon.CapEmbedding))
		}, Needs{Generate: true, Structured: true}, "m", "text generation"},
		{"embeddings", func(all []*backend.Backend) { setModel(all[0], text); setModel(all[1], text) },
			Needs{Embed: true}, "m", "embeddings"},
		{"capabilities unknown on one", func(all []*backend.Backend) { setModel(all[0], text) },
			Needs{Vision: true}, "m", ""},
		{"nothing needed", func(all []*backend.Backend) { setModel(all[0], text); setModel(all[1], text) },
			Needs{}, "m", ""},
		{"unknown model", func(all []*backend.Backend) {}, Needs{Vision: true}, "x", ""},
		// Only backends that could serve now count: a disabled or unhealthy
		// one with vision does not make the request wait.
		{"the vision one disabled", func(all []*backend.Backend) {
			setModel(all[0], text)
			setModel(all[1], vision)
			_ = all[1].SetState("disabled")
		}, Needs{Vision: true}, "m", "image input"},
		{"the vision one unhealthy", func(all []*backend.Backend) {
			setModel(all[0], text)
			all[1].SetStatus(&backend.Status{Models: map[string]canon.DiscoveredModel{"m": vision}}, testAdapter)
		}, Needs{Vision: true}, "m", "image input"},
		{"none can serve now", func(all []*backend.Backend) {
			_ = all[0].SetState("draining")
			_ = all[1].SetState("disabled")
		}, Needs{Vision: true}, "m", ""},
		// A backend that has the capabilities but fails on memory: a 503.
		{"memory, not capability", func(all []*backend.Backend) {
			setModel(all[0], text)
			setModel(all[1], canon.DiscoveredModel{Name: "m", SizeBytes: 50 << 30, Capabilities: vision.Capabilities})
			all[1].SetGPU(&backend.GPUStats{GPUs: 1, HasMem: true, MemTotal: 40 << 30})
		}, Needs{Vision: true}, "m", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := backends(t, 2)
			tc.setup(all)
			req := &sched.Request{Model: tc.model, Needs: tc.needs}
			if got := New(DefaultWeights()).Unmet(req, all); got != tc.want {
				t.Errorf("Unmet = %q, want %q", got, tc.want)
			}
			// Unmet speaks only when Rank ranks nothing for a known model.
			if tc.want != "" {
				if ranked, known := New(DefaultWeights()).Rank(nil, req, all, nil); len(ranked) != 0 || !known {
					t.Errorf("Rank ranked %q (known %v) for a request Unmet refuses", names(ranked), known)
				}
			}
		})
	}
}
