//go:build !wasip1

package sdk

// hostLog is the default logger of a native Plugin: none until SetLogger.
var hostLog func(level int, msg string)

// registered holds what a plugin's main package registered when it is built
// natively (for go vet and tests); the WebAssembly build serves it instead.
var registered *Plugin

// RegisterTranslator makes t the plugin this module serves. Call it once,
// from an init func of the plugin's main package.
func RegisterTranslator(m Manifest, t Translator) { register(NewTranslator(m, t)) }

// RegisterAdapter makes a the plugin this module serves. Call it once, from
// an init func of the plugin's main package.
func RegisterAdapter(m Manifest, a Adapter) { register(NewAdapter(m, a)) }

// RegisterBundle makes parts, in this order, the components this module
// serves (see NewBundle). Call it once, from an init func, instead of
// RegisterTranslator or RegisterAdapter.
func RegisterBundle(name, version string, parts ...Component) {
	register(NewBundle(name, version, parts...))
}

func register(p *Plugin) {
	if registered != nil {
		panic("sdk: a plugin is already registered in this module")
	}
	registered = p
}

// Registered returns the plugin registered in this (native) program, or nil.
func Registered() *Plugin { return registered }
