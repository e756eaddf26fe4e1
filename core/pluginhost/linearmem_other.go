//go:build !(linux || darwin || freebsd)

package pluginhost

import "github.com/tetratelabs/wazero/experimental"

// memAllocator: wazero's default (a Go slice) where this package reserves
// no address ranges.
var memAllocator experimental.MemoryAllocator
