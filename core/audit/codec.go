package audit

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// The first byte of every encoded event is its format; a spool written
// by a later format is refused rather than misread. Earlier releases
// wrote codecVersion (no blobs) and codecBlobs (version 1's fields, then
// the blobs: count, then hash, media type and bytes of each as strings);
// and codecTimings (version 1's fields, the fairness delay and stream
// plugin time, then the blob count, 0 when none, and blobs); this one
// writes codecState: codecTimings' fields, then the row state as a byte
// (stateCodes) and, for an interruption marker, Until (varint Unix
// microseconds). All four are read, so a spool left by an earlier
// release replays (its events are finished rows).
const (
	codecVersion = 1
	codecBlobs   = 2
	codecTimings = 3
	codecState   = 4
)

// stateCodes are the row states' bytes in codecState; 0, finished, is
// also what an earlier format means.
var stateCodes = [...]string{RowFinished, RowStarted, RowInterrupted, RowPanic, RowInterruptMark}

func stateCode(s string) byte {
	for i, v := range stateCodes {
		if v == s {
			return byte(i)
		}
	}
	return 0
}

// appendEvent appends e's binary form to b: the version, then every
// field in Event order (strings as uvarint length and bytes, integers as
// uvarints, time as varint Unix microseconds, bools as a byte, the float
// as 8 bytes).
func appendEvent(b []byte, e *Event) []byte {
	b = append(b, codecState)
	b = appendStr(b, e.RequestID)
	b = binary.AppendVarint(b, e.Time.UnixMicro())
	b = appendStr(b, e.Replica)
	b = binary.AppendVarint(b, e.UserID)
	for _, s := range [...]string{e.User, e.Group, e.KeyID, e.ClientIP, e.UserAgent, e.Dialect, e.Route, e.Kind, e.Model} {
		b = appendStr(b, s)
	}
	b = appendBool(b, e.Stream)
	for _, s := range [...]string{e.Backend, e.Node, e.GPUs} {
		b = appendStr(b, s)
	}
	b = append(b, e.Attempts)
	b = binary.AppendUvarint(b, uint64(e.Status))
	for _, s := range [...]string{e.ErrorCode, e.Error, e.FinishReason} {
		b = appendStr(b, s)
	}
	b = appendBool(b, e.ClientGone)
	for _, n := range [...]uint32{e.PromptTokens, e.CompletionTokens, e.ReasoningTokens, e.CachedTokens} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = appendBool(b, e.TokensEstimated)
	for _, n := range [...]uint32{e.TotalUs, e.AuthUs, e.LimitUs, e.ReadUs, e.CheckUs, e.DecodeUs, e.QueueUs,
		e.EncodeUs, e.BackendUs, e.RespondUs, e.TTFTUs, e.Chunks} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = binary.AppendUvarint(b, e.BytesIn)
	b = binary.AppendUvarint(b, e.BytesOut)
	b = appendStr(b, e.RequestBody)
	b = appendStr(b, e.ResponseBody)
	b = appendBool(b, e.ContentTruncated)
	b = appendStr(b, e.Decision)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.EnergyJ))
	b = binary.AppendUvarint(b, uint64(e.FairnessDelayUs))
	b = binary.AppendUvarint(b, uint64(e.StreamPluginUs))
	b = binary.AppendUvarint(b, uint64(len(e.Blobs)))
	for i := range e.Blobs {
		b = appendStr(b, e.Blobs[i].SHA256)
		b = appendStr(b, e.Blobs[i].MediaType)
		b = appendStr(b, e.Blobs[i].Data)
	}
	c := stateCode(e.State)
	b = append(b, c)
	if stateCodes[c] == RowInterruptMark {
		b = binary.AppendVarint(b, e.Until.UnixMicro())
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

var errCorrupt = errors.New("audit: malformed spool record")

// decoder reads an encoded event. Its strings are substrings of one
// string holding the whole record: one allocation per event.
type decoder struct {
	s   string
	off int
	err error
}

// decodeEvent fills e from p (one record's payload).
func decodeEvent(p []byte, e *Event) error {
	if len(p) == 0 || p[0] < codecVersion || p[0] > codecState {
		return errCorrupt
	}
	d := decoder{s: string(p), off: 1}
	e.RequestID = d.str()
	e.Time = time.UnixMicro(d.varint()).UTC()
	e.Replica = d.str()
	e.UserID = d.varint()
	e.User, e.Group, e.KeyID, e.ClientIP, e.UserAgent = d.str(), d.str(), d.str(), d.str(), d.str()
	e.Dialect, e.Route, e.Kind, e.Model = d.str(), d.str(), d.str(), d.str()
	e.Stream = d.bool()
	e.Backend, e.Node, e.GPUs = d.str(), d.str(), d.str()
	e.Attempts = d.byte()
	e.Status = uint16(d.uvarint())
	e.ErrorCode, e.Error, e.FinishReason = d.str(), d.str(), d.str()
	e.ClientGone = d.bool()
	e.PromptTokens, e.CompletionTokens, e.ReasoningTokens, e.CachedTokens = d.u32(), d.u32(), d.u32(), d.u32()
	e.TokensEstimated = d.bool()
	e.TotalUs, e.AuthUs, e.LimitUs, e.ReadUs, e.CheckUs, e.DecodeUs = d.u32(), d.u32(), d.u32(), d.u32(), d.u32(), d.u32()
	e.QueueUs, e.EncodeUs, e.BackendUs, e.RespondUs, e.TTFTUs, e.Chunks = d.u32(), d.u32(), d.u32(), d.u32(), d.u32(), d.u32()
	e.BytesIn, e.BytesOut = d.uvarint(), d.uvarint()
	e.RequestBody, e.ResponseBody = d.str(), d.str()
	e.ContentTruncated = d.bool()
	e.Decision = d.str()
	if d.err != nil || len(d.s)-d.off < 8 {
		return errCorrupt
	}
	var u uint64
	for i := range 8 {
		u |= uint64(d.s[d.off+i]) << (8 * i)
	}
	d.off += 8
	e.EnergyJ = math.Float64frombits(u)
	e.FairnessDelayUs, e.StreamPluginUs, e.Blobs = 0, 0, nil
	e.State, e.Until = RowFinished, time.Time{}
	var n uint64
	switch p[0] {
	case codecBlobs:
		if n = d.uvarint(); n == 0 {
			return errCorrupt
		}
	case codecTimings, codecState:
		e.FairnessDelayUs, e.StreamPluginUs = d.u32(), d.u32()
		n = d.uvarint()
	}
	if d.err != nil || n > uint64(len(d.s)-d.off) {
		return errCorrupt
	}
	if n > 0 {
		e.Blobs = make([]Blob, n)
		for i := range e.Blobs {
			e.Blobs[i] = Blob{SHA256: d.str(), MediaType: d.str(), Data: d.str()}
		}
	}
	if p[0] >= codecState {
		c := d.byte()
		if int(c) >= len(stateCodes) {
			return errCorrupt
		}
		e.State = stateCodes[c]
		if e.State == RowInterruptMark {
			e.Until = time.UnixMicro(d.varint()).UTC()
		}
	}
	if d.err != nil || d.off != len(d.s) {
		return errCorrupt
	}
	return nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= len(d.s) {
			break
		}
		c := d.s[d.off]
		d.off++
		if c < 0x80 {
			return v | uint64(c)<<shift
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.err = errCorrupt
	return 0
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *decoder) u32() uint32 {
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.err = errCorrupt
	}
	return uint32(v)
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.s) {
		d.err = errCorrupt
		return 0
	}
	c := d.s[d.off]
	d.off++
	return c
}

func (d *decoder) bool() bool { return d.byte() != 0 }

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.s)-d.off) {
		d.err = errCorrupt
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}
