package pluginhost

import "syscall"

// mapNoReserve: the reservation takes no swap or commit charge until used.
const mapNoReserve = syscall.MAP_NORESERVE
