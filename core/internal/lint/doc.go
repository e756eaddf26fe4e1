// Package lint holds tests of the repository's shape rather than of its
// behaviour. boundary_test.go is the import boundary, in the style of
// pebble's forbidden-imports lint: it lists the packages of both modules
// with `go list -deps -test` and fails when
//
//   - a library package under core/ (its non-test files) reaches a
//     package under plugins/: the gateway knows plugins only through the
//     ABI; the gateway command (core/cmd/mindrouter) alone links the
//     first-party plugins, as native plugins (plugins/firstparty);
//   - a package under plugins/ or sdk/, tests included, reaches a package
//     under core/: plugins are built against the SDK only, and a test that
//     needs a wasm host gets it from a test-only package outside core;
//   - a package outside sidecar/, tests included, reaches
//     github.com/NVIDIA/go-nvml: only the GPU sidecar links NVML.
//
// "Reaches" is through any chain of imports; a failure names the importer,
// the imported package and the chain from the package the rule is about.
// Known violations being removed elsewhere are listed in the test's
// allowlist, each with the reason; an entry that no longer matches
// anything fails the test too, so that the list empties as they are fixed.
package lint
