package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Dist summarises a set of duration samples in microseconds.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_us"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
}

// CountDist summarises integer samples (chunks per stream).
type CountDist struct {
	N   int     `json:"n"`
	Min int     `json:"min"`
	P50 float64 `json:"p50"`
	Max int     `json:"max"`
	Sum int64   `json:"sum"`
}

// dist sorts samples in place and returns their summary; quantiles use the
// nearest-rank method on the sorted samples.
func dist(samples []time.Duration) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	slices.Sort(samples)
	var sum float64
	for _, s := range samples {
		sum += float64(s)
	}
	us := func(d time.Duration) float64 { return round1(float64(d) / 1e3) }
	return Dist{
		N:    len(samples),
		Mean: round1(sum / float64(len(samples)) / 1e3),
		P50:  us(rank(samples, 0.50)),
		P90:  us(rank(samples, 0.90)),
		P99:  us(rank(samples, 0.99)),
		P999: us(rank(samples, 0.999)),
		Max:  us(samples[len(samples)-1]),
	}
}

// rank returns the nearest-rank q-quantile of sorted samples.
func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func countDist(c []int) CountDist {
	if len(c) == 0 {
		return CountDist{}
	}
	slices.Sort(c)
	var sum int64
	for _, v := range c {
		sum += int64(v)
	}
	mid := float64(c[(len(c)-1)/2])
	if len(c)%2 == 0 {
		mid = (float64(c[len(c)/2-1]) + float64(c[len(c)/2])) / 2
	}
	return CountDist{N: len(c), Min: c[0], P50: mid, Max: c[len(c)-1], Sum: sum}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// median returns the median of v (v is sorted in place); NaN when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func printDist(w io.Writer, name string, d Dist) {
	if d.N == 0 {
		return
	}
	fmt.Fprintf(w, "  %-8s p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (n=%d)\n", name,
		fmtUS(d.P50), fmtUS(d.P90), fmtUS(d.P99), fmtUS(d.P999), fmtUS(d.Max), d.N)
}

// fmtUS prints a microsecond figure with a unit that keeps it short.
func fmtUS(us float64) string {
	switch {
	case math.IsNaN(us):
		return "n/a"
	case math.Abs(us) >= 1e6:
		return strconv.FormatFloat(us/1e6, 'f', 2, 64) + "s"
	case math.Abs(us) >= 1e4:
		return strconv.FormatFloat(us/1e3, 'f', 1, 64) + "ms"
	default:
		return strconv.FormatFloat(us, 'f', 0, 64) + "µs"
	}
}
