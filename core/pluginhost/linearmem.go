package pluginhost

// sliceMemory is wazero's default linear memory, a Go slice grown by
// append, for where no reservation is possible.
type sliceMemory struct{ buf []byte }

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if n := int(size); n > len(m.buf) {
		m.buf = append(m.buf, make([]byte, n-len(m.buf))...)
	}
	return m.buf[:size]
}

func (m *sliceMemory) Free() { m.buf = nil }
