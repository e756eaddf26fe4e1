//go:build !race

package gateway

const raceFactor = 1
