package bundle

import "time"

// processCPU is unknown inside WebAssembly (no getrusage): 0.
func processCPU() time.Duration { return 0 }
