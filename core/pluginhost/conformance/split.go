package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/mindrouter/mindrouter/core/frame"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// streamFiles are the component's streams (opts.Streams for a module of
// one component) plus the *.sse, *.ndjson and *.jsonl files of its golden
// dir.
func (p *part) streamFiles() []string {
	files := append([]string(nil), p.streams...)
	if p.golden != "" {
		for _, pat := range []string{"*.sse", "*.ndjson", "*.jsonl"} {
			m, _ := filepath.Glob(filepath.Join(p.golden, pat))
			files = append(files, m...)
		}
	}
	return files
}

// fileFraming is the framing a recorded stream's extension says, else
// override ("" when neither says).
func fileFraming(path string, override sdk.Framing) sdk.Framing {
	switch {
	case override != "":
		return override
	case strings.HasSuffix(path, ".sse"):
		return sdk.FramingSSE
	case strings.HasSuffix(path, ".ndjson"), strings.HasSuffix(path, ".jsonl"):
		return sdk.FramingNDJSON
	}
	return ""
}

// framing is how the component's recorded stream at path is framed: the
// override, the extension, else the adapter manifest's.
func (p *part) framingOf(path string) sdk.Framing {
	if fr := fileFraming(path, p.framing); fr != "" {
		return fr
	}
	return p.m.Framing
}

// checkSplit feeds each recorded stream through host framing (core/frame)
// and OpStreamDecode, the state blob carried from call to call, cut at
// every byte boundary of its first MaxSplitPrefix bytes, at RandomSplits
// random boundaries after, and into random pieces 20 times; the
// concatenated canonical output must equal that of the uncut stream.
func (s *session) checkSplit() (string, error) {
	if s.part.m.Kind != sdk.KindAdapter {
		return "", skip("translators consume canonical chunks, not upstream streams")
	}
	files := s.part.streamFiles()
	if len(files) == 0 {
		return "", skip("no recorded streams")
	}
	rng := rand.New(rand.NewPCG(uint64(s.opts.Seed), 2))
	var errs []error
	cuts, calls := 0, 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		fr := s.part.framingOf(path)
		want, n, err := s.decodeStream(fr, [][]byte{data})
		calls += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s uncut: %w", filepath.Base(path), err))
			continue
		}
		try := func(parts [][]byte, what string) bool {
			cuts++
			got, n, err := s.decodeStream(fr, parts)
			calls += n
			if err == nil && !bytes.Equal(got.out, want.out) {
				err = fmt.Errorf("output differs:\n got  %q\n want %q", got.out, want.out)
			}
			if err == nil && got.done != want.done {
				err = fmt.Errorf("stream_done %v, uncut %v", got.done, want.done)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", filepath.Base(path), what, err))
				return false
			}
			return true
		}
		for k := 1; k < len(data) && k <= s.opts.MaxSplitPrefix; k++ {
			if !try([][]byte{data[:k], data[k:]}, fmt.Sprintf("cut at %d", k)) {
				break
			}
		}
		if len(data) > s.opts.MaxSplitPrefix+1 {
			for range s.opts.RandomSplits {
				k := s.opts.MaxSplitPrefix + 1 + rng.IntN(len(data)-s.opts.MaxSplitPrefix-1)
				if !try([][]byte{data[:k], data[k:]}, fmt.Sprintf("cut at %d", k)) {
					break
				}
			}
		}
		for range 20 {
			var parts [][]byte
			for rest := data; len(rest) > 0; {
				n := min(1+rng.IntN(64), len(rest))
				parts, rest = append(parts, rest[:n]), rest[n:]
			}
			if !try(parts, fmt.Sprintf("in %d random pieces", len(parts))) {
				break
			}
		}
	}
	return fmt.Sprintf("%d streams, %d cuts, %d calls", len(files), cuts, calls), errors.Join(errs...)
}

type decoded struct {
	out  []byte // concatenated item lists
	done bool
}

// decodeStream frames parts as the gateway would and decodes them on one
// pinned version.
func (s *session) decodeStream(fr sdk.Framing, parts [][]byte) (d decoded, calls int, err error) {
	var sp frame.Splitter = frame.NewNDJSON(0)
	if fr == sdk.FramingSSE {
		sp = frame.NewSSE(0)
	}
	v := s.strict.Pin()
	if v == nil {
		return d, 0, pluginhost.ErrClosed
	}
	defer v.Release()
	var state, events []byte
	var res pluginhost.Result
	first := true
	emit := func(ev []byte) { events = abi.AppendItem(events, ev) }
	call := func(flags uint32) error {
		if first {
			flags |= abi.FlagFirst
			first = false
		}
		calls++
		if err := v.Call(s.ctx, abi.OpStreamDecode, s.addr(abi.OpStreamDecode, pluginhost.CallInput{Flags: flags, State: state, Payload: events}), &res); err != nil {
			return err
		}
		d.out = append(d.out, res.Payload...)
		d.done = d.done || res.Flags&abi.ResultStreamDone != 0
		state = append(state[:0], res.State...)
		return nil
	}
	for _, p := range parts {
		events = events[:0]
		if err := sp.Feed(p, emit); err != nil {
			return d, calls, err
		}
		if len(events) > 0 {
			if err := call(0); err != nil {
				return d, calls, err
			}
		}
	}
	events = events[:0]
	if err := sp.End(emit); err != nil {
		return d, calls, err
	}
	return d, calls, call(abi.FlagEnd)
}
