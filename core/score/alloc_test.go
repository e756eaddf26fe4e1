//go:build !race

package score

import (
	"testing"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/sched"
)

// Ranking without recording allocates nothing (its scratch storage is
// pooled), excluded backends and every figure included.
func TestScorer_RankDoesNotAllocate(t *testing.T) {
	all := benchBackends(t, 8)
	s := New(DefaultWeights())
	req := &sched.Request{Model: "m", Exclude: []*backend.Backend{all[3]}}
	dst := make([]*backend.Backend, 0, len(all))
	d := &sched.Decision{}
	if n := testing.AllocsPerRun(1000, func() {
		got, known := s.RankFor(dst[:0], req, Needs{Generate: true, Tools: true}, all, d)
		if !known || len(got) != len(all)-1 {
			t.Fatalf("ranked %d, known %v", len(got), known)
		}
	}); n != 0 {
		t.Fatalf("Rank allocates %v times", n)
	}
}
