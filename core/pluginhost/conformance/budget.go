package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mindrouter/mindrouter/core/pluginhost"
)

// checkDeterminism runs every input on a pooled instance that has served
// the earlier checks and on a fresh one: the results must be identical.
func (s *session) checkDeterminism() (string, error) {
	v := s.strict.Pin()
	if v == nil {
		return "", pluginhost.ErrClosed
	}
	defer v.Release()
	var errs []error
	inputs := s.inputs()
	var a, b pluginhost.Result
	for _, in := range inputs {
		errA := v.Call(s.ctx, in.op, in.in, &a)
		errB := v.CallFresh(s.ctx, in.op, in.in, &b)
		if fatal(errA) || fatal(errB) {
			errs = append(errs, fmt.Errorf("%s: %w", in.op, errors.Join(errA, errB)))
			continue
		}
		if a.Status != b.Status || a.Flags != b.Flags || !bytes.Equal(a.State, b.State) || !bytes.Equal(a.Meta, b.Meta) ||
			!bytes.Equal(a.Payload, b.Payload) || !bytes.Equal(a.Err, b.Err) {
			errs = append(errs, fmt.Errorf("%s: warm instance %s %q, fresh instance %s %q", in.op, a.Status, a.Payload, b.Status, b.Payload))
		}
	}
	return fmt.Sprintf("%d inputs, warm vs fresh instance", len(inputs)), errors.Join(errs...)
}

// checkBudget times BudgetCalls calls on the trusted instance (inputs that
// succeed, else all), checks p99 against the budget, then the memory check
// on the same instance.
func (s *session) checkBudget() (string, error) {
	v := s.trusted.Pin()
	if v == nil {
		return "", pluginhost.ErrClosed
	}
	defer v.Release()
	var out pluginhost.Result
	// Inputs go to the trusted instance (which nothing can interrupt) only
	// after they passed in strict mode; those that succeed are preferred.
	var safe, ok []input
	for _, in := range s.inputs() {
		err := s.strict.Call(s.ctx, in.op, in.in, &out)
		if fatal(err) {
			continue
		}
		safe = append(safe, in)
		if err == nil {
			ok = append(ok, in)
		}
	}
	if len(ok) == 0 {
		ok = safe
	}
	if len(ok) == 0 {
		return "", errors.New("no input runs without a trap or timeout")
	}
	for i := range 100 { // warm up
		in := &ok[i%len(ok)]
		_ = v.Call(s.ctx, in.op, in.in, &out)
	}
	n := s.opts.BudgetCalls
	durs := make([]time.Duration, n)
	mem := make([]uint32, 0, 4)
	fig := &s.part.fig
	fig.MemoryStartBytes = v.Stats().MaxMemory
	for i := range n {
		in := &ok[i%len(ok)]
		start := time.Now()
		err := v.Call(s.ctx, in.op, in.in, &out)
		durs[i] = time.Since(start)
		if fatal(err) {
			return "", fmt.Errorf("%s: %w", in.op, err)
		}
		if (i+1)%(n/4) == 0 {
			mem = append(mem, v.Stats().MaxMemory)
		}
	}
	slices.Sort(durs)
	fig.P50, fig.P99, fig.Max = durs[n/2], durs[n*99/100], durs[n-1]
	fig.MemoryBytes = mem[len(mem)-1]
	detail := fmt.Sprintf("%d calls over %d inputs: p50 %v, p99 %v, max %v (budget p99 %v, trusted mode)",
		n, len(ok), fig.P50, fig.P99, fig.Max, s.opts.Budget)
	var errs []error
	if fig.P99 > s.opts.Budget {
		errs = append(errs, fmt.Errorf("p99 %v over the %v budget", fig.P99, s.opts.Budget))
	}
	s.part.mem = mem
	return detail, errors.Join(errs...)
}

// checkMemory: after the budget calls, linear memory is under the pool's
// recycle threshold (pool.recycle_mb, at most 75% of the limit) and shows
// no steady growth across four samples.
func (s *session) checkMemory() (string, error) {
	mem, fig := s.part.mem, &s.part.fig
	if len(mem) == 0 {
		return "", skip("the budget check did not run")
	}
	limit := uint32(min(uint64(s.opts.MemoryMB)<<20*3/4, uint64(pluginhost.DefaultPoolRecycleMB)<<20, math.MaxUint32))
	detail := fmt.Sprintf("linear memory %s before, %s after %d calls (samples %v; limit %s)",
		mib(fig.MemoryStartBytes), mib(fig.MemoryBytes), s.opts.BudgetCalls, mibs(mem), mib(limit))
	var errs []error
	if fig.MemoryBytes >= limit {
		errs = append(errs, fmt.Errorf("linear memory %s at the recycle threshold %s", mib(fig.MemoryBytes), mib(limit)))
	}
	growing := len(mem) > 1
	for i := 1; i < len(mem); i++ {
		growing = growing && mem[i] > mem[i-1]
	}
	if growing && mem[len(mem)-1]-mem[0] > 4<<20 {
		errs = append(errs, fmt.Errorf("linear memory grows steadily: %v", mibs(mem)))
	}
	return detail, errors.Join(errs...)
}

func mib(b uint32) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func mibs(bs []uint32) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = mib(b)
	}
	return out
}
