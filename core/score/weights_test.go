package score

import (
	"math"
	"strings"
	"testing"
)

func TestDefaultWeights(t *testing.T) {
	w := DefaultWeights()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, v := range w.array() {
		if v <= 0 {
			t.Errorf("a default weight is %v: every part should count", v)
		}
		sum += v
	}
	if sum != 100 {
		t.Fatalf("default weights sum to %v, want 100", sum)
	}
	if New(w).Weights() != w {
		t.Fatalf("Weights() = %+v", New(w).Weights())
	}
}

func TestWeights_Validate(t *testing.T) {
	if err := (Weights{}).Validate(); err != nil {
		t.Fatalf("all zero: %v", err)
	}
	w := Weights{Loaded: -1, Latency: math.NaN(), Waiting: math.Inf(1), Priority: 3}
	err := w.Validate()
	if err == nil {
		t.Fatal("bad weights accepted")
	}
	for _, want := range []string{"weight loaded: -1", "weight latency: NaN", "weight waiting: +Inf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "priority") {
		t.Errorf("a good weight reported: %v", err)
	}
	// New turns what Validate rejects into 0 rather than a broken score.
	if got := New(w).Weights(); got != (Weights{Priority: 3}) {
		t.Fatalf("New(bad) weights %+v", got)
	}
}
