//go:build darwin || freebsd

package pluginhost

const mapNoReserve = 0
