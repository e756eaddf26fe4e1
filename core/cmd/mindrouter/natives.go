package main

import (
	"sync"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/plugins/firstparty"
)

// The command links the first-party plugins (plugins/firstparty) and
// registers them as native plugins, so a plugins.yaml entry with path
// "native:NAME" serves them. This file is the one place the gateway's
// production code imports plugins/: the library packages under core/ do
// not (core/internal/lint's boundary test).

var registerOnce sync.Once

// registerNatives registers firstparty.Factories with
// pluginhost.RegisterNative (once).
func registerNatives() {
	registerOnce.Do(func() {
		for name, f := range firstparty.Factories {
			pluginhost.RegisterNative(name, f)
		}
	})
}
