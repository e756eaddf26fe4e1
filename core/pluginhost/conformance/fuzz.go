package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// unknownOp is an op no v1 plugin implements: it must answer unsupported.
const unknownOp abi.Op = 99

// checkFuzz sends FuzzIterations random and mutated inputs to every op
// (and an unknown one) of the component, with random flags, corrupt state
// blobs and meta — in a bundle, and now and then a header naming a
// component out of range or of the other kind: each must come back with a
// status, never a trap, timeout or malformed result.
func (s *session) checkFuzz() (string, error) {
	rng := rand.New(rand.NewPCG(uint64(s.opts.Seed), 1))
	ops := append(opsOf(s.part.m.Kind), unknownOp)
	seeds := s.inputs()
	var errs []error
	var out pluginhost.Result
	statuses := map[abi.Status]int{}
	for i := range s.opts.FuzzIterations {
		op := ops[i%len(ops)]
		in := s.addr(op, fuzzInput(rng, op, seeds))
		if s.bundle && rng.IntN(8) == 0 {
			in.Translator, in.Adapter = uint16(rng.IntN(len(s.parts)+2)), uint16(rng.IntN(len(s.parts)+2))
		}
		err := s.strict.Call(s.ctx, op, in, &out)
		if fatal(err) {
			if len(errs) < 5 {
				errs = append(errs, fmt.Errorf("%s component %d/%d flags %#x state %q meta %q payload %.200q: %w",
					op, in.Translator, in.Adapter, in.Flags, in.State, in.Meta, in.Payload, err))
			}
			continue
		}
		var se *pluginhost.StatusError
		if err != nil && !errors.As(err, &se) {
			return "", err
		}
		statuses[out.Status]++
	}
	if err := s.unknownOpCheck(); err != nil {
		errs = append(errs, err)
	}
	return fmt.Sprintf("%d calls, statuses %v", s.opts.FuzzIterations, statuses), errors.Join(errs...)
}

func (s *session) unknownOpCheck() error {
	var out pluginhost.Result
	err := s.strict.Call(s.ctx, unknownOp, s.addr(unknownOp, pluginhost.CallInput{Payload: []byte("{}")}), &out)
	if out.Status != abi.StatusUnsupported {
		return fmt.Errorf("unknown op %d: status %s (%v), want unsupported", unknownOp, out.Status, err)
	}
	return nil
}

// fuzzInput builds one hostile input for op from seeds.
func fuzzInput(rng *rand.Rand, op abi.Op, seeds []input) pluginhost.CallInput {
	var seed *pluginhost.CallInput
	var forOp []int
	for i := range seeds {
		if seeds[i].op == op {
			forOp = append(forOp, i)
		}
	}
	if len(forOp) > 0 {
		seed = &seeds[forOp[rng.IntN(len(forOp))]].in
	} else if len(seeds) > 0 {
		seed = &seeds[rng.IntN(len(seeds))].in
	}
	var in pluginhost.CallInput
	in.Flags = uint32(rng.IntN(4))
	if rng.IntN(20) == 0 {
		in.Flags = rng.Uint32()
	}
	switch r := rng.IntN(10); {
	case r < 5 && seed != nil:
		in.Payload = mutate(rng, seed.Payload)
	case r < 7 && seed != nil: // a list of mutated items, for list ops
		for range 1 + rng.IntN(4) {
			in.Payload = abi.AppendItem(in.Payload, mutate(rng, seed.Payload))
		}
	case r < 9:
		in.Payload = randBytes(rng, rng.IntN(256))
	}
	switch r := rng.IntN(10); {
	case r < 6 && seed != nil:
		in.Meta = seed.Meta
	case r < 8:
		in.Meta = randBytes(rng, rng.IntN(32))
	}
	if rng.IntN(10) < 3 {
		in.State = randBytes(rng, rng.IntN(64))
	}
	return in
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

var interesting = []byte(`{}[]":,\0 -.eE9` + "\xff\x00\n")

// mutate applies a few random edits to a copy of b.
func mutate(rng *rand.Rand, b []byte) []byte {
	b = append([]byte(nil), b...)
	for range 1 + rng.IntN(4) {
		if len(b) == 0 {
			b = append(b, interesting[rng.IntN(len(interesting))])
			continue
		}
		i := rng.IntN(len(b))
		switch rng.IntN(6) {
		case 0: // flip a bit
			b[i] ^= 1 << rng.IntN(8)
		case 1: // truncate
			b = b[:i]
		case 2: // insert an interesting byte
			b = append(b[:i], append([]byte{interesting[rng.IntN(len(interesting))]}, b[i:]...)...)
		case 3: // delete a range
			j := min(len(b), i+1+rng.IntN(16))
			b = append(b[:i], b[j:]...)
		case 4: // duplicate a range
			j := min(len(b), i+1+rng.IntN(16))
			b = append(b[:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
		case 5: // overwrite with an interesting byte
			b[i] = interesting[rng.IntN(len(interesting))]
		}
	}
	return b
}

// FuzzOps is a native fuzz target over every op of the plugin at wasmPath:
//
//	func FuzzMyPlugin(f *testing.F) { conformance.FuzzOps(f, "my.wasm", conformance.Options{}) }
//
// Each input must come back with a status: a trap, timeout or malformed
// result fails. The plugin runs in strict mode. In a bundle the targets
// are every op of every component, addressed by its index, and the fused
// ops of every translator × adapter pair.
func FuzzOps(f *testing.F, wasmPath string, opts Options) {
	opts.defaults()
	var rep Report
	s, err := open(context.Background(), wasmPath, &opts, &rep)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.close)
	targets := s.targets()
	for _, sd := range s.seeds() {
		for i, tg := range targets {
			if tg.op == sd.op && tg.t == sd.in.Translator && tg.a == sd.in.Adapter {
				f.Add(uint8(i), uint8(sd.in.Flags), []byte(nil), sd.in.Meta, sd.in.Payload)
			}
		}
	}
	f.Fuzz(func(t *testing.T, op, flags uint8, state, meta, payload []byte) {
		var out pluginhost.Result
		tg := targets[int(op)%len(targets)]
		err := s.strict.Call(s.ctx, tg.op, pluginhost.CallInput{Flags: uint32(flags), Translator: tg.t, Adapter: tg.a,
			State: state, Meta: meta, Payload: payload}, &out)
		if fatal(err) {
			t.Fatal(err)
		}
	})
}

// target is an op and the component indexes it names.
type target struct {
	op   abi.Op
	t, a uint16
}

// targets are every op of every component, the fused ops of every
// translator × adapter pair of a bundle, and an unknown op.
func (s *session) targets() []target {
	var out []target
	for _, p := range s.parts {
		for _, op := range opsOf(p.m.Kind) {
			in := addrTo(p.idx, op, pluginhost.CallInput{})
			out = append(out, target{op, in.Translator, in.Adapter})
		}
	}
	for _, pr := range s.pairs() {
		for _, op := range fusedOps {
			out = append(out, target{op, pr.t.idx, pr.a.idx})
		}
	}
	return append(out, target{op: unknownOp})
}

// seeds are every component's inputs and, in a bundle, the fused inputs.
func (s *session) seeds() []input {
	var out []input
	for i := range s.parts {
		s.part = &s.parts[i]
		out = append(out, s.inputs()...)
	}
	s.part = nil
	for _, pr := range s.pairs() {
		out = append(out, s.fusedInputs(pr)...)
	}
	return out
}
