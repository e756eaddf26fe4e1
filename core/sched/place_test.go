package sched

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// WriteJSON says what encoding/json says from the struct's tags.
func TestDecision_WriteJSON(t *testing.T) {
	for _, d := range []Decision{
		{},
		{Candidates: []Candidate{{Backend: "a", Score: 0.75, Parts: map[string]float64{"loaded": 0.3, "latency": 0.05}},
			{Backend: "b\"x", Failed: "model_missing"}}, Chosen: "a", Deficit: -12.5, Weight: 3, QueueWait: 1500, Position: 4, FairnessWait: 700},
		{Chosen: "b", QueueWait: 2500, FairnessWait: 1000, FleetSlot: FleetSlotClaimed, FleetWait: 800, FleetKey: 1333.25},
		{Chosen: "c", FleetSlot: FleetSlotHeld},
	} {
		want, err := json.Marshal(&d)
		if err != nil {
			t.Fatal(err)
		}
		var w jsonw.W
		d.WriteJSON(&w)
		var got, exp any
		if err := json.Unmarshal(w.B, &got); err != nil {
			t.Fatalf("invalid JSON %s: %v", w.B, err)
		}
		_ = json.Unmarshal(want, &exp)
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("WriteJSON %s\nencoding/json %s", w.B, want)
		}
	}
}

// needsPlacer ranks nothing and explains why with unmet.
type needsPlacer struct{ unmet string }

func (p needsPlacer) Rank(dst []*backend.Backend, req *Request, all []*backend.Backend, d *Decision) ([]*backend.Backend, bool) {
	known := false
	for _, b := range all {
		known = known || b.Status().Serves(req.Model)
	}
	return dst, known
}

func (p needsPlacer) Unmet(req *Request, all []*backend.Backend) string { return p.unmet }

// A known model that no backend can serve because of req.Needs is a 400
// naming the capability when the Placer explains it; without an
// explanation (or an unknown model) the errors stay 503 and 404.
func TestFair_CapabilityError(t *testing.T) {
	reg, _ := registry(t, 1)
	ctx := context.Background()
	f := NewFair(FairOptions{Registry: reg, Placer: needsPlacer{unmet: "image input"}})
	ae := apiErr(t, must2(f.Admit(ctx, &Request{Model: "m", Needs: Needs{Vision: true}})), 400, "model_capability")
	if want := `the model "m" does not support image input`; ae.Msg != want {
		t.Fatalf("message %q, want %q", ae.Msg, want)
	}
	apiErr(t, must2(f.Admit(ctx, &Request{Model: "nope"})), 404, "model_not_found")
	f = NewFair(FairOptions{Registry: reg, Placer: needsPlacer{}})
	apiErr(t, must2(f.Admit(ctx, &Request{Model: "m"})), 503, "backend_unavailable")
}
