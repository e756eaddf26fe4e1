package fetchguard

import (
	"errors"
	"io"
	"sync/atomic"
)

// ErrOverBudget is the cause of a request Budget's refusal
// (ReasonTooLarge): the images together, not one of them, are too large.
var ErrOverBudget = errors.New("fetchguard: images over the budget")

// Budget bounds the image bytes several fetches may read together: a
// request's images (whatever their number) under a gateway-wide Budget
// (every request's images held at once). Bytes are taken before they are
// read: a response's Content-Length up front, so an image that cannot fit
// is refused before its body is fetched, and a body of unknown length one
// read at a time, so a fetch stops within one read of the limit. A Budget
// is safe for concurrent use (a request fetches its images at once).
type Budget struct {
	max    int64
	used   atomic.Int64
	parent *Budget
	busy   bool // its limit is the gateway's: refusals are ReasonBusy
}

// NewBudget returns a budget of max bytes; what it takes it also takes
// from parent (nil: none), until Release.
func NewBudget(max int64, parent *Budget) *Budget { return &Budget{max: max, parent: parent} }

// NewSharedBudget returns a gateway-wide budget of max bytes: its
// refusals are ReasonBusy (a retry may find room), not ReasonTooLarge.
func NewSharedBudget(max int64) *Budget { return &Budget{max: max, busy: true} }

// Used is the bytes taken and not given back.
func (b *Budget) Used() int64 { return b.used.Load() }

// Max is the budget's limit.
func (b *Budget) Max() int64 { return b.max }

// take reserves n bytes in b and its parents, or nothing: the refusal
// names the budget that had no room.
func (b *Budget) take(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return b.refusal()
	}
	if err := b.parent.take(n); err != nil {
		b.used.Add(-n)
		return err
	}
	return nil
}

// give returns n bytes taken but not used (a body shorter than its
// Content-Length, a refused image).
func (b *Budget) give(n int64) {
	for ; b != nil && n > 0; b = b.parent {
		b.used.Add(-n)
	}
}

// Release gives back everything b holds, in b and its parents: the
// request is done with its images.
func (b *Budget) Release() {
	if b != nil {
		b.give(b.used.Load())
	}
}

func (b *Budget) refusal() *Error {
	if b.busy {
		return newError(ReasonBusy, nil, "the gateway is fetching too many images, retry shortly")
	}
	return newError(ReasonTooLarge, ErrOverBudget, "the images given by URL are larger together than %d bytes", b.max)
}

// budgetReader counts a body's bytes into the fetcher's total and takes
// from a budget those beyond prepaid (a Content-Length taken up front)
// before handing them on; taken is all this body took, prepaid included.
type budgetReader struct {
	r       io.Reader
	b       *Budget
	counted *atomic.Int64
	read    int64
	prepaid int64
	taken   int64
}

func (r *budgetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.counted.Add(int64(n))
		r.read += int64(n)
		if over := r.read - r.prepaid; over > 0 {
			k := min(over, int64(n))
			if terr := r.b.take(k); terr != nil {
				return 0, terr
			}
			r.taken += k
		}
	}
	return n, err
}
