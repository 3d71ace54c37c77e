package config

// ValidateOptions is what validation needs from the rest of the binary.
// config imports no package of this module, so the rules that other stages
// own reach validation here, and only here, in two kinds of fields.
//
// What the build has: ResolverKnown, VerifierKnown and OnVerifyFailure
// narrow the names config accepts to those this binary serves. A nil one
// narrows nothing.
//
// Checks: each Check field is one stage's own check of one section of the
// config, called on what the file said once defaults are applied. It
// returns nil, or an error (errors.Join for several) each of whose errors
// is one problem, its text beginning with the key it names, written from
// the place each field's comment gives; config puts that place in front. A
// problem at a key that config has already named, or at a key inside it,
// is dropped, so a stage need not know which of its rules config shares
// (both check the form of an admin token's sha256). A nil check checks
// nothing.
type ValidateOptions struct {
	// ResolverKnown reports whether a route resolver name is registered.
	ResolverKnown func(name string) bool
	// VerifierKnown reports whether a verifier type is available.
	VerifierKnown func(name string) bool
	// OnVerifyFailure lists the failure modes this build serves; nil: all.
	OnVerifyFailure []string

	// CheckResolver builds the route resolver, which checks a registered
	// resolver's options. Keys from the top: "route_resolver: ...".
	CheckResolver func(r RouteResolver) error
	// CheckVerify builds a source's verifier and reports what is wrong with
	// its verify section (a secret that does not decode, an unknown
	// algorithm). Keys from the source: "verify.algorithm: ...". It is
	// called only for a verifier type config accepts whose secrets are set
	// and resolved.
	CheckVerify func(v Verify) error
	// CheckDedupe reports what is wrong with a source's dedupe key spec for
	// its verifier type. Keys from the source: "dedupe.key: ...". It is
	// called only for a key that is set.
	CheckDedupe func(key, verifierType string) error
	// CheckSink builds a source's sink from its spec, making no connection,
	// and reports what the sink's own parser finds (the url's form, a
	// header the sink sets itself, a secret that does not decode). Keys
	// from the sink: "headers.X-Foo: ...". It is called only for a sink
	// whose secret is resolved.
	CheckSink func(s Sink) error
	// CheckFilter compiles a sink's filter (a CEL expression) and reports
	// why it cannot be: a syntax error, an undeclared name, a result that
	// is not a bool, with CEL's position. Keys from the sink: "filter:
	// ERROR: <input>:1:1: undeclared reference to 'evnt_type'". It is
	// called only for a filter that is set.
	CheckFilter func(expr string) error
	// RefusedTarget is the http sink's SSRF guard on a url's host as
	// written: why it refuses host before any lookup, or "". The lifecycle
	// sink's url is held to it (its publisher would retry a refused event
	// for ever); nil: not checked.
	RefusedTarget func(host string) string
	// CheckAdminTokens checks the admin tokens (names, scopes, duplicates).
	// Keys from the top: "admin.tokens[1] (ci): ...".
	CheckAdminTokens func(tokens []AdminToken) error
}
