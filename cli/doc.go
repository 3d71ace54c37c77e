// Package cli is the appliance's command line: serve, check-config,
// inspect, replay and version. serve reads flags and the config, builds
// each stage's Options and opens the stages in dependency order
// (serve.go, stages.go, router.go); the rules that make a 201 true
// (DESIGN.md §6) live in the stages, not here.
//
// cmd/ankusa is a one-line main around Main. A program that adds its own
// route resolver (edge.RegisterResolver) or verifier builds its own binary
// the same way: register, then call Main (see examples/).
//
// cli may import every stage; no package of this module imports cli but
// the programs (cmd/ankusa, examples/).
package cli
