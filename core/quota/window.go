package quota

import "time"

// window counts one replica's admissions in 100 ms buckets over the last
// 60 s. A check counts every bucket that touches [now-60s, now], so it sees
// up to 60.1 s of history: conservative (it never admits more than the
// limit in any 60 s) at the price of up to one bucket of under-admission.
// The running sum makes add and allow O(1) amortized, without allocation
// once the ring exists.
type window struct {
	cnt   []int32 // ring of nBuckets counts; nil until first use
	head  int64   // newest bucket index seen
	first int64   // oldest bucket index that may be non-zero
	sum   int
}

const (
	bucketNs = int64(100 * time.Millisecond)
	minuteNs = int64(time.Minute)
	nBuckets = minuteNs/bucketNs + 1
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (w *window) slot(i int64) int64 {
	s := i % nBuckets
	if s < 0 {
		s += nBuckets
	}
	return s
}

// advance moves the window to now, dropping buckets that left it. A clock
// that steps back is treated as standing still.
func (w *window) advance(now int64) {
	cur := floorDiv(now, bucketNs)
	if w.cnt == nil {
		w.cnt = make([]int32, nBuckets)
		w.head, w.first = cur, cur
		return
	}
	if cur <= w.head {
		return
	}
	if cur-w.head >= nBuckets {
		clear(w.cnt)
		w.sum = 0
	} else {
		for i := w.head + 1; i <= cur; i++ {
			s := w.slot(i)
			w.sum -= int(w.cnt[s])
			w.cnt[s] = 0
		}
	}
	w.head = cur
	if lo := cur - nBuckets + 1; w.first < lo {
		w.first = lo
	}
	for w.first < cur && w.cnt[w.slot(w.first)] == 0 {
		w.first++
	}
}

// count is the admissions in the window at now.
func (w *window) count(now int64) int {
	w.advance(now)
	return w.sum
}

// add records one admission at now.
func (w *window) add(now int64) {
	w.advance(now)
	w.cnt[w.slot(w.head)]++
	w.sum++
}

// untilFree is how long until the oldest counted admission leaves the
// window (0 when none is counted).
func (w *window) untilFree(now int64) time.Duration {
	w.advance(now)
	if w.sum == 0 {
		return 0
	}
	return time.Duration((w.first+nBuckets)*bucketNs - now)
}
