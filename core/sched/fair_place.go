package sched

import "github.com/mindrouter/mindrouter/core/backend"

// LeastLoadedPlacer is the Placer a Fair uses by default: the routable
// backends serving the model, those not in Request.Exclude first, each
// group with a backend whose breaker waits for its probe
// (backend.ProbeDue) first, then by in-flight share of capacity (ties in
// configuration order) — the choice LeastLoaded makes. It allocates only
// what d records.
type LeastLoadedPlacer struct{}

var _ Placer = LeastLoadedPlacer{}

// Rank implements Placer.
func (LeastLoadedPlacer) Rank(dst []*backend.Backend, req *Request, all []*backend.Backend, d *Decision) ([]*backend.Backend, bool) {
	known := false
	rec := d != nil && d.Record
	for _, b := range all {
		if !b.Status().Serves(req.Model) {
			if rec {
				d.Candidates = append(d.Candidates, Candidate{Backend: b.Name, Failed: "model_available"})
			}
			continue
		}
		known = true
		if !b.Routable() {
			if rec {
				d.Candidates = append(d.Candidates, Candidate{Backend: b.Name, Failed: "healthy"})
			}
			continue
		}
		if rec {
			d.Candidates = append(d.Candidates, Candidate{Backend: b.Name, Score: 1 - b.LoadShare()})
		}
		dst = append(dst, b)
		for i := len(dst) - 1; i > 0 && placedBefore(req, dst[i], dst[i-1]); i-- {
			dst[i], dst[i-1] = dst[i-1], dst[i]
		}
	}
	return dst, known
}

func placedBefore(req *Request, a, b *backend.Backend) bool {
	ea, eb := excluded(req.Exclude, a), excluded(req.Exclude, b)
	if ea != eb {
		return eb
	}
	if pa, pb := a.ProbeDue(), b.ProbeDue(); pa != pb {
		return pa
	}
	return a.LoadShare() < b.LoadShare()
}
