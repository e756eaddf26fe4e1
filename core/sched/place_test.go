package sched

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// WriteJSON says what encoding/json says from the struct's tags.
func TestDecision_WriteJSON(t *testing.T) {
	for _, d := range []Decision{
		{},
		{Candidates: []Candidate{{Backend: "a", Score: 0.75, Parts: map[string]float64{"loaded": 0.3, "latency": 0.05}},
			{Backend: "b\"x", Failed: "model_missing"}}, Chosen: "a", Deficit: -12.5, Weight: 3, QueueWait: 1500, Position: 4},
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
