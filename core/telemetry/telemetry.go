package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultRetention is how long samples are kept when telemetry.retention
// is not set.
const DefaultRetention = 7 * 24 * time.Hour

// MaxPoints bounds the buckets of one series in a query: a step smaller
// than the range over MaxPoints is raised to it.
const MaxPoints = 2000

// GPUSample is one GPU's reading at one poll. A nil figure was not
// reported (the sidecar could not read it).
type GPUSample struct {
	At       time.Time
	Node     string
	GPU      int // the device index on its node
	Name     string
	UtilPct  *float64 // SM utilisation, percent
	MemUsed  *float64 // bytes
	MemTotal *float64 // bytes
	TempC    *float64
	PowerW   *float64
}

// BackendSample is one backend's state at one discovery round on one
// replica.
type BackendSample struct {
	At            time.Time
	Replica       string
	Backend       string
	Healthy       bool
	State         string // enabled, draining, disabled
	Breaker       string // closed, open, half-open
	InFlight      int64
	MaxConcurrent int
	Waiting       int64   // waiting for a slot of this backend
	LatencyMs     float64 // the latency average (0: none observed yet)
}

// Query selects one kind of series: Name is a node (GPUs) or a backend
// ("" every one); Since is inclusive, Until exclusive; Step is the bucket
// width (rounded to whole seconds, at least one).
type Query struct {
	Name         string
	Since, Until time.Time
	Step         time.Duration
}

// Validate reports the first bad field.
func (q Query) Validate() error {
	switch {
	case q.Since.IsZero() || q.Until.IsZero():
		return errors.New("telemetry: a query needs a time range")
	case !q.Since.Before(q.Until):
		return errors.New("telemetry: since must be before until")
	case q.Step < time.Second:
		return errors.New("telemetry: step must be at least a second")
	}
	return nil
}

// stepSeconds is the query's step in whole seconds, raised so that no
// series has more than MaxPoints buckets.
func (q Query) stepSeconds() int64 {
	s := int64(q.Step / time.Second)
	if minStep := int64(q.Until.Sub(q.Since)/time.Second)/MaxPoints + 1; s < minStep {
		s = minStep
	}
	return max(s, 1)
}

// GPUPoint is one GPU's bucket: the mean of each figure over the bucket's
// samples (nil when none reported it), and the bucket's start.
type GPUPoint struct {
	At       time.Time `json:"t"`
	Node     string    `json:"node"`
	GPU      int       `json:"gpu"`
	Name     string    `json:"name"`
	Samples  int64     `json:"samples"`
	UtilPct  *float64  `json:"utilization_pct"`
	MemUsed  *float64  `json:"memory_used_bytes"`
	MemTotal *float64  `json:"memory_total_bytes"`
	TempC    *float64  `json:"temperature_c"`
	PowerW   *float64  `json:"power_w"`
}

// BackendPoint is one backend's bucket over every replica's samples.
type BackendPoint struct {
	At      time.Time `json:"t"`
	Backend string    `json:"backend"`
	Samples int64     `json:"samples"`
	// Healthy is the fraction of samples that found it healthy (0..1).
	Healthy float64 `json:"healthy"`
	// InFlight is the mean over the samples, InFlightMax the largest:
	// each replica samples its own in-flight count, so with several
	// replicas (and no fleet scheduler sharing slots) the mean is per
	// replica.
	InFlight      float64 `json:"in_flight"`
	InFlightMax   int64   `json:"in_flight_max"`
	MaxConcurrent int64   `json:"max_concurrent"`
	Waiting       float64 `json:"waiting"`
	LatencyMs     float64 `json:"latency_ms"` // mean over the samples that had one; 0: none
}

// Store keeps and reads samples. Implementations are safe for concurrent
// use.
type Store interface {
	Write(ctx context.Context, gpus []GPUSample, backends []BackendSample) error
	GPUs(ctx context.Context, q Query) ([]GPUPoint, error)
	Backends(ctx context.Context, q Query) ([]BackendPoint, error)
	// Prune deletes the samples older than before.
	Prune(ctx context.Context, before time.Time) error
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("telemetry: %s: %w", what, err)
}
