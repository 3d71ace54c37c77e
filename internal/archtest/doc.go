// Package archtest holds the architecture test: every package's imports of
// this module, held against the table in ARCHITECTURE.md at the root of
// the repository. It has no code of its own: it imports no package of
// this module (it asks go list what they import), and nothing may import
// it.
package archtest
