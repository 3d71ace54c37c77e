// Package verify checks webhook signatures over the raw body bytes, before
// anything parses them (router step 12). Every verifier compares in
// constant time, accepts several secrets at once (rotation) and, where the
// scheme allows, several signatures in one header.
//
// Verifiers are built once per source (New) and are safe for concurrent
// use; Verify allocates nothing on the success path (HMAC states are
// pooled). A verifier is a pure function of the headers, the body, the
// secrets and the clock: the package imports config and envelope only, and
// never meta or any storage stage (a re-verification, such as a quarantine
// release, is its caller's policy).
package verify
