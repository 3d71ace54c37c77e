// Package source holds webhook sources (DESIGN.md §2.9): the Source spec
// as the edge uses it, with its verifier and dedupe extractor built once;
// the compiled routes (route.go); the immutable snapshot the edge reads
// per request through an atomic pointer, with no lock and no I/O; and the
// stores that publish snapshots. This build ships the static store
// (sources from the config file).
//
// It imports config, envelope, verify and dedupe (to build a source's
// verifier and extractor), and never a storage stage, the edge or the
// admin API: they read snapshots from it.
package source
