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
		{Candidates: []Candidate{{Backend: "a", Score: 0.75, Parts: Parts{{"loaded", 0.3}, {"latency", 0.05}}},
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

// Parts encode as an object in their order and decode back in it.
func TestParts_JSON(t *testing.T) {
	ps := Parts{{"waiting", 5}, {"loaded", 30}, {"queue_depth", 17.2972972972973}, {"at_capacity", 1}}
	b, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"waiting":5,"loaded":30,"queue_depth":17.2972972972973,"at_capacity":1}`; string(b) != want {
		t.Fatalf("marshal %s, want %s", b, want)
	}
	var back Parts
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, ps) {
		t.Fatalf("unmarshal %v, %v", back, err)
	}
	if v, ok := back.Get("queue_depth"); !ok || v != 17.2972972972973 {
		t.Errorf("Get queue_depth = %v, %v", v, ok)
	}
	if _, ok := back.Get("latency"); ok {
		t.Error("Get latency found a part that is not there")
	}
	var d Decision
	if err := json.Unmarshal([]byte(`{"candidates":[{"backend":"a","score":1,"parts":null},{"backend":"b","score":2,"parts":{"x":"y"}}]}`), &d); err == nil {
		t.Errorf("a part that is not a number decoded: %+v", d)
	}
	if err := json.Unmarshal([]byte(`{"candidates":[{"backend":"a","score":1,"parts":[1]}]}`), &d); err == nil {
		t.Errorf("parts that are not an object decoded: %+v", d)
	}
}

// BenchmarkDecision_WriteJSON: a one-candidate decision as the default
// weights record it, once a request when the audit is on.
func BenchmarkDecision_WriteJSON(b *testing.B) {
	d := &Decision{Candidates: []Candidate{{Backend: "fast-vllm", Score: 82.29729729729729,
		Parts: Parts{{"loaded", 30}, {"gpu_util", 5}, {"queue_depth", 17.2972972972973}, {"latency", 10},
			{"throughput", 10}, {"priority", 0}, {"kv_cache", 5}, {"waiting", 5}}}}, Chosen: "fast-vllm", Weight: 4}
	var w jsonw.W
	b.ReportAllocs()
	for b.Loop() {
		w.Reset()
		d.WriteJSON(&w)
	}
}
