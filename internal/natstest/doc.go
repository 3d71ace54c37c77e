// Package natstest is what the tests of several packages need to run
// against a real NATS JetStream server: the shared server's URL, a stream
// name and subject prefix of a test's own (the stream is deleted when the
// test ends), a client to read what the code under test stored, and a
// private nats-server that a test may stop, restart (keeping its store
// directory, so the stream survives) and pause (SIGSTOP: a server that
// holds the connection and answers nothing).
//
// The shared server is ANKUSA_NATS_URL, default the local one on
// 127.0.0.1:4222 (scripts/ensure-nats.sh starts it for make test). Tests
// never stop it and never touch a stream of another test: each makes its
// own with Names.
//
// The private server's binary is ANKUSA_NATS_SERVER, else nats-server in
// PATH, else <repo>/bin/nats-server.
//
// A test that cannot reach NATS, or finds no nats-server to start, is
// skipped, or fails when CI=true: CI must not pass by skipping what it was
// meant to run (see Need).
//
// Only tests import this package. Of this module it imports internal/child
// alone (a free address and an output buffer for its own nats-server), and
// must never import a package of the product: the packages it tests
// import it.
package natstest
