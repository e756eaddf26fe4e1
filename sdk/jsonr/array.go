package jsonr

import (
	"iter"
	"strconv"

	"github.com/valyala/fastjson"
)

// Array is a JSON array, or an empty one when absent. Its embedded Value
// is the array itself (Exists, Fail, ...).
type Array struct {
	Value
	items []*fastjson.Value
}

// Len returns the number of elements.
func (a Array) Len() int { return len(a.items) }

// At returns element i; beyond the end it records "path: expected at
// least i+1 elements, got n" (when the array is present) and returns an
// absent value.
func (a Array) At(i int) Value {
	if i >= 0 && i < len(a.items) {
		return Value{v: a.items[i], parent: a.v, idx: i, r: a.r}
	}
	if a.v != nil && a.r.err == nil {
		a.fail("expected at least " + strconv.Itoa(i+1) + " elements, got " + strconv.Itoa(len(a.items)))
	}
	return Value{parent: a.v, idx: max(i, 0), r: a.r}
}

// All iterates over the elements with their indexes:
//
//	for i, m := range r.Array("messages").All() { ... }
//
// It stops early once an error has been recorded, so a loop never reads
// past the first mistake.
func (a Array) All() iter.Seq2[int, Value] {
	return func(yield func(int, Value) bool) {
		for i, it := range a.items {
			if a.r.err != nil || !yield(i, Value{v: it, parent: a.v, idx: i, r: a.r}) {
				return
			}
		}
	}
}
