package pluginhost

import "sync"

// maxAnswers bounds the response shapes a version keeps: one per route,
// model and client option set in use, far fewer than this; past it the
// cache starts afresh.
const maxAnswers = 512

// answers holds the response shapes (ABI 2.11) a version's fused response
// calls left, by the call's metadata but its id and created (package
// plugcall builds the key and the value). They go with the version: a
// reloaded plugin starts without any.
type answers struct {
	mu sync.RWMutex
	m  map[string]any
}

// Answer returns the response shape kept under key, or nil.
func (v *Version) Answer(key []byte) any {
	a := &v.answers
	a.mu.RLock()
	s := a.m[string(key)]
	a.mu.RUnlock()
	return s
}

// KeepAnswer keeps s under key, replacing what was there.
func (v *Version) KeepAnswer(key []byte, s any) {
	a := &v.answers
	a.mu.Lock()
	if a.m == nil || len(a.m) >= maxAnswers {
		a.m = make(map[string]any, 8)
	}
	a.m[string(key)] = s
	a.mu.Unlock()
}
