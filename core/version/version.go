// Package version is the gateway's build stamp: the Makefile's gateway
// target sets Version and Commit with -ldflags -X; a plain `go build` or
// `go install` falls back to the module version and the VCS revision Go
// records in the binary.
package version

import (
	"runtime/debug"
	"sync"
)

// Set at link time:
//
//	-ldflags "-X github.com/mindrouter/mindrouter/core/version.Version=v1.2.3
//	          -X github.com/mindrouter/mindrouter/core/version.Commit=abcdef0"
var (
	Version string
	Commit  string
)

type info struct{ version, commit string }

var get = sync.OnceValue(func() info {
	i := info{version: Version, commit: Commit}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if i.version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.version = bi.Main.Version
		}
		if i.commit == "" {
			var rev string
			var dirty bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if rev != "" && dirty {
				rev += "-dirty"
			}
			i.commit = rev
		}
	}
	if i.version == "" {
		i.version = "dev"
	}
	if i.commit == "" {
		i.commit = "unknown"
	}
	return i
})

// String is the version ("dev" for an unstamped build from a work tree).
func String() string { return get().version }

// Commit is the VCS revision the binary was built from ("unknown" when
// none was recorded).
func CommitID() string { return get().commit }
