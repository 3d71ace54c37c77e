// Package archtest holds the architecture test: every package's imports of
// this module, held against the table in ARCHITECTURE.md at the root of
// the repository. It has no code of its own and nothing imports it.
package archtest
