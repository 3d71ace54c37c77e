// Package cli is the appliance's command line: serve, check-config,
// inspect, replay and version. serve reads flags and the config, builds
// each stage's Options and opens the stages in dependency order
// (serve.go, stages.go, router.go); the rules that make a 201 true
// (DESIGN.md §6) live in the stages, not here.
//
// cmd/ankusa is a one-line main around Main. A program that adds its own
// route resolver (edge.RegisterResolver) or verifier builds its own binary
// the same way: register, then call Main (see examples/opaquetoken).
//
// cli may import every stage; no package of this module imports cli but
// the programs that wire a node (cmd/ankusa, examples/opaquetoken): not a
// stage, a test helper, a benchmark, a tool, nor examples/mintedurls, a
// client of the HTTP APIs only (ARCHITECTURE.md holds all of them to it).
package cli
