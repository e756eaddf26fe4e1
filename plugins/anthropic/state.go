package anthropic

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// stateVersion is the first byte of the stream state blob and the
// manifest's StateVersion.
const stateVersion = 1

// Block kinds: which content block is open.
const (
	blockNone = iota
	blockThinking
	blockText
	blockTool
)

// streamState is what EncodeStream remembers between calls of one stream:
// any pooled instance may serve the next call, so nothing lives in the
// Translator. Tool call indexes outside 0..63 are not tracked in seen.
type streamState struct {
	started bool   // message_start and ping were written
	done    bool   // message_stop was written
	tools   bool   // a tool_use block was opened
	kind    uint64 // the open block's kind (blockNone: none open)
	blocks  uint64 // content blocks started; the open one is blocks-1
	tool    uint64 // the open tool_use block's tool call index
	seen    uint64 // bit i: tool call i has had its block
	finish  uint64 // finishCode of the canonical finish reason
	usage   bool   // a usage report was seen
	prompt  uint64
	output  uint64
	cached  uint64
}

const (
	flagStarted = 1 << iota
	flagDone
	flagTools
	flagUsage
	flagAll = flagStarted | flagDone | flagTools | flagUsage
)

var finishCodes = [...]canon.FinishReason{canon.FinishNone, canon.FinishStop, canon.FinishLength,
	canon.FinishToolCalls, canon.FinishContentFilter}

// finishCode returns fr's index in finishCodes; an unknown reason counts
// as stop.
func finishCode(fr canon.FinishReason) uint64 {
	for i, f := range finishCodes {
		if f == fr {
			return uint64(i)
		}
	}
	return 1
}

var errState = sdk.BadInput("anthropic: corrupt stream state")

// decode reads a blob written by encode; an empty blob is the initial state.
func (s *streamState) decode(b []byte) error {
	*s = streamState{}
	if len(b) == 0 {
		return nil
	}
	if b[0] != stateVersion {
		return errState
	}
	r := sdk.StateReader{B: b[1:]}
	flags := r.Uint()
	s.kind, s.blocks, s.tool, s.seen, s.finish = r.Uint(), r.Uint(), r.Uint(), r.Uint(), r.Uint()
	s.prompt, s.output, s.cached = r.Uint(), r.Uint(), r.Uint()
	if r.Err() != nil || len(r.B) != 0 || flags&^flagAll != 0 || s.kind > blockTool ||
		s.finish >= uint64(len(finishCodes)) || s.kind != blockNone && s.blocks == 0 ||
		s.blocks > jsonread.MaxInt32 || s.prompt > jsonread.MaxInt32 || s.output > jsonread.MaxInt32 || s.cached > jsonread.MaxInt32 {
		*s = streamState{}
		return errState
	}
	s.started, s.done = flags&flagStarted != 0, flags&flagDone != 0
	s.tools, s.usage = flags&flagTools != 0, flags&flagUsage != 0
	return nil
}

// encode writes s into w's reused buffer and returns it.
func (s *streamState) encode(w *sdk.StateWriter) []byte {
	w.B = append(w.B[:0], stateVersion)
	var flags uint64
	for _, f := range [...]struct {
		on  bool
		bit uint64
	}{{s.started, flagStarted}, {s.done, flagDone}, {s.tools, flagTools}, {s.usage, flagUsage}} {
		if f.on {
			flags |= f.bit
		}
	}
	w.Uint(flags)
	for _, v := range [...]uint64{s.kind, s.blocks, s.tool, s.seen, s.finish, s.prompt, s.output, s.cached} {
		w.Uint(v)
	}
	return w.B
}
