// Package verify checks webhook signatures over the raw body bytes, before
// anything parses them (router step 12). Every verifier compares in
// constant time, accepts several secrets at once (rotation) and, where the
// scheme allows, several signatures in one header.
//
// A provider is data, not code: presets.yaml (embedded) lists the
// catalogue, each entry a family (hmac, standardwebhooks, twilio, ed25519,
// ecdsa, token, basic, body-hmac, jws, rsa) and that family's parameters.
// Keys a provider serves from the network (Plaid's JWKs, PayPal's
// certificate) are configured: no verifier fetches anything. New builds
// none, the generic hmac of the verify section's own keys, or a preset by
// its name; every preset has a test vector in testdata/presets.
//
// Verifiers are built once per source (New) and are safe for concurrent
// use; Verify allocates nothing on the success path (HMAC states, parsed
// JSON bodies, JWS claims and Twilio's forms are pooled), but for ecdsa,
// jws's ES256 and rsa, whose arithmetic does. The work per request is bounded by the configuration
// (template parts, list items, signatures checked), never by the sender. A
// verifier is a pure function of the headers, the body, the secrets and
// the clock: of the project it imports config and envelope only, and never
// meta or any storage stage (a re-verification, such as a quarantine
// release, is its caller's policy).
package verify
