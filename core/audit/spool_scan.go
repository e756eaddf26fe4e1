package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ScanSpool reads the spool in dir without changing it and calls fn for
// every event its segment files still hold, in spool order: those not yet
// in the sink and, until their segment is removed, those already there.
// A torn or damaged record ends its segment's scan (as it would end the
// replay). It is for looking into a stopped gateway's spool (the loss
// tests read what a killed gateway had made durable); a running gateway
// may be appending while it reads, so its view is only a snapshot.
func ScanSpool(dir string, fn func(e *Event)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("audit: read spool directory: %w", err)
	}
	var segs []int64
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), segExt); ok {
			if off, err := strconv.ParseInt(name, 10, 64); err == nil && off >= 0 {
				segs = append(segs, off)
			}
		}
	}
	slices.Sort(segs)
	var ev Event
	for _, off := range segs {
		b, err := os.ReadFile((&spool{dir: dir}).segPath(off))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) { // removed since the listing
				continue
			}
			return fmt.Errorf("audit: read spool segment: %w", err)
		}
		for len(b) >= recHeader {
			n := int(binary.LittleEndian.Uint32(b))
			if n == 0 || n > maxRecord || recHeader+n > len(b) {
				break
			}
			payload := b[recHeader : recHeader+n]
			if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
				break
			}
			ev = Event{}
			if decodeEvent(payload, &ev) == nil {
				fn(&ev)
			}
			b = b[recHeader+n:]
		}
	}
	return nil
}
