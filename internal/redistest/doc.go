// Package redistest is what the tests of several packages need to run
// against a real Redis: the server's URL, a key namespace of a test's own
// (deleted when the test ends), a client to look at what the code under
// test stored, and a private redis-server that a test may stop and start.
//
// The shared server is ANKUSA_REDIS_URL, default the local one on
// 127.0.0.1:6379 (scripts/ensure-redis.sh starts it for make test). Tests
// never flush it and never stop it: each keeps its keys under its own
// Namespace, which is deleted key by key (SCAN of the prefix) when the test
// ends. A test that must see Redis go away starts its own with
// StartServer.
//
// A test that cannot reach Redis, or finds no redis-server to start, is
// skipped, or fails when CI=true: CI must not pass by skipping what it was
// meant to run (see Need).
//
// Only tests import this package. Of this module it imports internal/child
// alone (a free address and an output buffer for its own redis-server), and
// must never import a package of the product: the packages it tests
// import it.
package redistest
