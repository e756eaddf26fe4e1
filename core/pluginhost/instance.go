package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Sentinel errors of Call. They are wrapped with the plugin name and op.
var (
	// ErrTrap: the guest trapped (an unrecovered panic, a fatal runtime
	// error, out of memory, proc_exit). The instance was discarded.
	ErrTrap = errors.New("plugin trapped")
	// ErrTimeout: a strict plugin's call ran past its deadline (or the
	// caller's ctx ended) and was interrupted. The instance was discarded.
	ErrTimeout = errors.New("plugin call timed out")
	// ErrProtocol: the guest broke the ABI (a result outside its memory, a
	// malformed result area, an oversized payload). The instance was discarded.
	ErrProtocol = errors.New("plugin broke the ABI")
	// ErrPoolTimeout: no instance became free before the caller's deadline
	// (or pool.wait_ms when the ctx has none and is not WithoutWaitLimit).
	ErrPoolTimeout = errors.New("no free plugin instance")
	// ErrClosed: the plugin was removed or the host closed.
	ErrClosed = errors.New("plugin closed")
	// ErrTooLarge: the call input exceeds the plugin's limits; nothing ran.
	ErrTooLarge = errors.New("plugin input too large")
)

// CallInput is one unit of work. The host copies it into the guest; the
// slices are not retained.
type CallInput struct {
	Flags     uint32 // abi.FlagFirst, abi.FlagEnd
	RequestID uint64 // for log correlation
	// Translator and Adapter are the component indexes the call is for
	// (0 and 0 in a module of one component).
	Translator, Adapter uint16
	State               []byte // the stream's state blob from the previous call's Result.State
	Meta                []byte // abi.AppendMeta pairs
	Payload             []byte
}

// Result is what a call produced. Call resets the slices to [:0] and appends,
// so a caller that reuses one Result reaches a zero-allocation steady state.
// It is safe to pass a Result's State back as the next CallInput.State.
type Result struct {
	Status  abi.Status
	Flags   uint32 // abi.ResultStreamDone, ...
	State   []byte // new state blob; a copy of the input state when the plugin kept it
	Meta    []byte
	Payload []byte
	Err     []byte // error message when Status >= abi.StatusBadInput, at most 512 bytes
}

// StatusError is returned by Call when the plugin answered with an error
// status (>= abi.StatusBadInput). The Result is still filled. The instance
// is healthy and was kept. Msg is the plugin's message cut to 512 bytes
// on a UTF-8 boundary ("…" appended): it can echo client input.
type StatusError struct {
	Plugin string
	Op     abi.Op
	Status abi.Status
	Msg    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("pluginhost: plugin %q %s: %s: %s", e.Plugin, e.Op, e.Status, e.Msg)
}

// instance is one guest (or one native sdk.Plugin), checked out exclusively
// for the duration of a call.
type instance struct {
	v      *Version
	mod    api.Module
	mem    api.Memory
	call   api.Function // cached: ExportedFunction builds a call engine each time
	buf    api.Function
	ctx    context.Context // every call's context: built once, no per-call allocation
	cancel context.CancelFunc
	stack  [2]uint64
	inPtr  uint32 // guest input buffer address (stable until the next mr_buf)
	inCap  uint32
	calls  int
	out    *guestOutput // stdout and stderr; nil for native instances

	// Read by the watchdog while a call runs.
	started  atomic.Int64 // mono() at call start, 0 when idle
	last     atomic.Int64 // mono() at the last call's start (the timekeeper's idle test)
	op       atomic.Uint32
	reqID    atomic.Uint64
	reported atomic.Bool
	lastMem  atomic.Uint32 // linear memory size after the last call

	// Strict deadline, shared with the timekeeper.
	mu       sync.Mutex
	deadline int64 // mono ns
	running  bool
	timedOut bool

	native *sdk.Plugin
	nbuf   []byte
}

var epoch = time.Now()

// mono is a monotonic clock reading in nanoseconds; it does not allocate.
func mono() int64 { return int64(time.Since(epoch)) }

// do runs one call. bad reports that the instance must be discarded.
func (in *instance) do(ctx context.Context, op abi.Op, ci *CallInput, out *Result) (bad bool, err error) {
	v := in.v
	if len(ci.State) > v.stateMax || len(ci.Payload) > v.payloadMax || len(ci.Meta) > v.payloadMax {
		return false, v.errorf(op, ErrTooLarge, "state %d B, meta %d B, payload %d B", len(ci.State), len(ci.Meta), len(ci.Payload))
	}
	need := abi.HeaderSize + len(ci.State) + len(ci.Meta) + len(ci.Payload)
	var res []byte
	if in.native != nil {
		in.nbuf = writeInput(in.nbuf[:0], need, ci)
		res = in.native.Call(op, in.nbuf)
	} else if res, bad, err = in.callWasm(ctx, op, need, ci); err != nil {
		return true, err
	}
	r, perr := abi.ParseResult(res)
	if perr != nil {
		return true, v.errorf(op, ErrProtocol, "result area: %v", perr)
	}
	if len(r.Payload) > v.payloadMax || len(r.Meta) > v.payloadMax {
		return true, v.errorf(op, ErrProtocol, "result payload %d B over the limit", len(r.Payload))
	}
	out.Status, out.Flags = r.Status, r.Flags
	if r.Flags&abi.ResultStateKeep != 0 {
		out.State = append(out.State[:0], ci.State...)
	} else {
		out.State = append(out.State[:0], r.State...)
	}
	out.Meta = append(out.Meta[:0], r.Meta...)
	out.Payload = append(out.Payload[:0], r.Payload...)
	out.Err = append(out.Err[:0], r.Error...)
	if len(r.State) > v.stateMax {
		out.Status, out.State = abi.StatusStateTooLarge, out.State[:0]
		out.Err = fmt.Appendf(out.Err[:0], "state blob %d B over the %d B limit", len(r.State), v.stateMax)
	}
	if out.Status == abi.StatusNeedImages && len(out.Err) > maxNeedImagesMsg {
		// A cut list would name a URL the client never gave.
		out.Status = abi.StatusBadInput
		out.Err = append(out.Err[:0], "the request's image URLs are longer than the gateway fetches"...)
	}
	if out.Status >= abi.StatusBadInput {
		// The message can echo client input (a 4 MB model name): it is
		// bounded before it reaches a log line or a response. A
		// need_images list is the URLs to fetch, bounded above.
		if out.Status != abi.StatusNeedImages {
			out.Err = truncateBytes(out.Err, maxStatusMsg)
		}
		return bad, &StatusError{Plugin: v.plugin.name, Op: op, Status: out.Status, Msg: string(out.Err)}
	}
	return false, nil
}

// writeInput lays out header + state + meta + payload in b (len need).
func writeInput(b []byte, need int, ci *CallInput) []byte {
	if cap(b) < need {
		b = make([]byte, need, need+need/4)
	}
	b = b[:need]
	abi.PutHeader(b, abi.Header{
		Flags: ci.Flags, StateLen: uint32(len(ci.State)), MetaLen: uint32(len(ci.Meta)),
		PayloadLen: uint32(len(ci.Payload)), RequestID: ci.RequestID,
		Translator: ci.Translator, Adapter: ci.Adapter,
	})
	n := abi.HeaderSize + copy(b[abi.HeaderSize:], ci.State)
	n += copy(b[n:], ci.Meta)
	copy(b[n:], ci.Payload)
	return b
}

// callWasm writes the input into the guest buffer in place, calls mr_call
// and returns a view of the result area (valid until the next call on this
// instance). discard reports an instance that must not be reused even
// though the call completed.
func (in *instance) callWasm(ctx context.Context, op abi.Op, need int, ci *CallInput) (res []byte, discard bool, err error) {
	v := in.v
	start := mono()
	in.op.Store(uint32(op))
	in.reqID.Store(ci.RequestID)
	in.started.Store(start)
	in.last.Store(start)
	if v.strict {
		deadline := start + int64(v.timeout)
		if dl, ok := ctx.Deadline(); ok {
			deadline = min(deadline, start+int64(time.Until(dl)))
		}
		in.beginStrict(deadline)
	}
	if h := v.host; h != nil && h.timekeeper.parked.Load() {
		h.timekeeper.unpark() // after started: see timekeeper.idle
	}
	in.out.hold()
	err = in.writeAndCall(op, need, ci)
	in.started.Store(0)
	if in.reported.Load() {
		in.reported.Store(false)
	}
	if v.strict && in.endStrict() {
		// The timekeeper fired: even a call that completed meanwhile
		// leaves a cancelled context behind, so the instance goes.
		in.out.flush()
		if err == nil {
			res, err = in.result(op)
			return res, true, err
		}
		return nil, true, v.errorf(op, ErrTimeout, "after %v", time.Duration(mono()-start).Round(time.Millisecond))
	}
	if err != nil {
		if errors.Is(err, ErrProtocol) {
			in.out.flush()
			return nil, true, err
		}
		// One warning line per trap; the guest's output (a Go runtime
		// prints a dozen stack lines) and wazero's trace at debug only.
		msg, trace, _ := strings.Cut(err.Error(), "\n")
		output := in.out.take()
		reason := trapReason(output, msg)
		v.logTrap(op, ci.RequestID, reason, output, trace)
		return nil, true, v.errorf(op, ErrTrap, "%s", reason)
	}
	in.out.flush()
	res, err = in.result(op)
	return res, err != nil, err
}

func (in *instance) writeAndCall(op abi.Op, need int, ci *CallInput) error {
	if uint32(need) > in.inCap {
		if err := in.grow(in.ctx, op, uint32(need)); err != nil {
			return err
		}
	}
	view, ok := in.mem.Read(in.inPtr, uint32(need))
	if !ok {
		return in.v.errorf(op, ErrProtocol, "input buffer outside memory")
	}
	abi.PutHeader(view, abi.Header{
		Flags: ci.Flags, StateLen: uint32(len(ci.State)), MetaLen: uint32(len(ci.Meta)),
		PayloadLen: uint32(len(ci.Payload)), RequestID: ci.RequestID,
		Translator: ci.Translator, Adapter: ci.Adapter,
	})
	n := abi.HeaderSize + copy(view[abi.HeaderSize:], ci.State)
	n += copy(view[n:], ci.Meta)
	copy(view[n:], ci.Payload)
	in.stack[0], in.stack[1] = uint64(op), uint64(need)
	return in.call.CallWithStack(in.ctx, in.stack[:])
}

// result returns a view of the result area mr_call pointed to.
func (in *instance) result(op abi.Op) ([]byte, error) {
	ptr, size := abi.Unpack(in.stack[0])
	res, ok := in.mem.Read(ptr, size)
	if !ok {
		return nil, in.v.errorf(op, ErrProtocol, "result [%#x, +%d) outside memory (%d B)", ptr, size, in.mem.Size())
	}
	return res, nil
}

// grow asks the guest for an input buffer of at least need bytes, with
// headroom so a slowly growing input does not call mr_buf every time.
func (in *instance) grow(ctx context.Context, op abi.Op, need uint32) error {
	want := max(need+need/4, 4096)
	want = (want + 4095) &^ 4095
	in.stack[0] = uint64(want)
	if err := in.buf.CallWithStack(ctx, in.stack[:1]); err != nil {
		return err
	}
	ptr := uint32(in.stack[0])
	if _, ok := in.mem.Read(ptr, want); !ok || ptr == 0 {
		return in.v.errorf(op, ErrProtocol, "mr_buf(%d) returned %#x outside memory", want, ptr)
	}
	in.inPtr, in.inCap = ptr, want
	return nil
}

// close releases the instance; for a guest, its module and memory.
func (in *instance) close() {
	if in.cancel != nil {
		in.cancel()
	}
	if in.mod != nil {
		guestSinks.Delete(in.mod)
		in.mod.Close(context.Background())
	}
}

// memBytes is the guest's linear memory size (0 for native instances).
func (in *instance) memBytes() uint32 {
	if in.mem == nil {
		return 0
	}
	return in.mem.Size()
}
