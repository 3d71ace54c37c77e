// Package config is the appliance's configuration language: the YAML
// schema of DESIGN.md §5 (config.go), its defaults (defaults.go), secret
// references (secrets.go), the sink template language (template.go) and
// the validation that the file, check-config and the admin API share
// (validate.go, source.go, sink.go, routes.go), so that a spec is valid or
// not wherever it comes from.
//
// Loading reports every problem it can find in one pass, each on its own
// line and named by its key: every unknown key (never ignored: a config
// with one is refused), every value that does not parse, and the
// validation of everything that did, even where one problem may follow
// from another.
//
// config is a leaf: it must never import any package of this module, so
// that every stage can import it. The rules that belong to other stages
// (building a verifier, a resolver, a dedupe key, checking admin tokens)
// reach validation as the callbacks of ValidateOptions (options.go), and
// what a template expands to for one hook is delivery's (dispatch/tmpl).
package config
